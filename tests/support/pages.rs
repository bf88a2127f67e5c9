//! A loopback HTTP server of pages for `web_fetch`'s tests: each path answered by a route
//! (a page, a redirect, a huge page written as long as it is read, or no answer at all).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener};

/// What the test server answers for a path.
pub enum Answer {
    Page(&'static str, Vec<u8>),
    Redirect(String),
    /// This many bytes of HTML, written as long as the client reads.
    Huge(usize),
    /// Headers never come; the connection is held until the test ends.
    Stall,
}

/// A loopback HTTP server answering each request by `route`.
pub fn serve(route: impl Fn(&str) -> Answer + Send + 'static) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) <= 2 {
                    break;
                }
            }
            let path = first.split_whitespace().nth(1).unwrap_or("/").to_owned();
            match route(&path) {
                Answer::Page(kind, body) => {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(&body);
                }
                Answer::Redirect(to) => {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    );
                }
                Answer::Huge(size) => {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n"
                    );
                    let chunk = vec![b'a'; 64 * 1024];
                    let mut left = size;
                    while left > 0 {
                        let n = left.min(chunk.len());
                        if stream.write_all(&chunk[..n]).is_err() {
                            break;
                        }
                        left -= n;
                    }
                }
                Answer::Stall => held.push(stream),
            }
            let _ = reader.read(&mut [0; 0]);
        }
    });
    address
}
