//! A tunnel's first bytes read as a TLS ClientHello, strictly: the name (SNI) it gives is the
//! bytes the host will read, compared as they are, and anything the reader cannot take whole
//! (a hello past [`HELLO_LIMIT`], a record that is not a handshake, two names, an extension
//! list that does not add up) is a refusal, never a pass. A general TLS parser (rustls's
//! `Acceptor`) was tried first and failed open: it drops names it does not take as host names
//! (`evil..test`, an address, `host:443`) and gives up on hellos a real server accepts (a
//! duplicated unknown extension, an empty record first), and giving up meant carrying them.

/// The largest ClientHello read (its handshake message, without record headers). Browsers'
/// hellos with post-quantum key shares are about 2 KiB; a hello past this is refused.
pub(super) const HELLO_LIMIT: usize = 64 * 1024;

/// The most bytes read before the hello must be whole: the hello, and the record headers of
/// the smallest fragments a client may cut it into (empty records included).
pub(super) const READ_LIMIT: usize = HELLO_LIMIT + 16 * 1024;

/// The content type of a TLS handshake record.
const HANDSHAKE: u8 = 22;
/// The handshake type of a ClientHello.
const CLIENT_HELLO: u8 = 1;
/// The extension carrying the server name (RFC 6066).
const SERVER_NAME: u16 = 0;
/// The largest record fragment TLS allows (2^14 bytes of plaintext).
const MAX_FRAGMENT: usize = 16 * 1024;

/// What a client's first bytes are, so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Hello {
    /// More bytes are needed to tell.
    Partial,
    /// Not TLS (its first byte is no TLS record's): the host was judged, carry it.
    NotTls,
    /// A whole ClientHello, and the server name it gives, as bytes (`None`: it names none).
    Named(Option<Vec<u8>>),
    /// Starts as TLS but cannot be read whole: why, for the refusal.
    Unreadable(&'static str),
}

/// Reads `first`, a client's first bytes, as far as they go.
pub(super) fn read(first: &[u8]) -> Hello {
    match first.first() {
        None => return Hello::Partial,
        // Any TLS record type starts TLS: a server may take a warning alert or an empty record
        // before the hello, so none of them lets the hello go unread.
        Some(byte) if !(20..=24).contains(byte) => return Hello::NotTls,
        Some(_) => {}
    }
    let mut handshake = Vec::new();
    let mut rest = first;
    loop {
        if let Some(done) = whole_message(&handshake) {
            return done;
        }
        if rest.len() < 5 {
            break;
        }
        let (kind, major, length) = (
            rest[0],
            rest[1],
            usize::from(u16::from_be_bytes([rest[3], rest[4]])),
        );
        if kind != HANDSHAKE {
            return Hello::Unreadable(
                "a record other than a handshake came before the hello ended",
            );
        }
        if major != 3 {
            return Hello::Unreadable("a record of no TLS version");
        }
        if length > MAX_FRAGMENT {
            return Hello::Unreadable("a record longer than TLS allows");
        }
        if rest.len() < 5 + length {
            break;
        }
        handshake.extend_from_slice(&rest[5..5 + length]);
        rest = &rest[5 + length..];
    }
    if first.len() >= READ_LIMIT {
        return Hello::Unreadable("no whole hello within the limit");
    }
    Hello::Partial
}

/// The hello in `handshake` (the records' fragments joined), when its message is whole.
fn whole_message(handshake: &[u8]) -> Option<Hello> {
    let [kind, a, b, c, body @ ..] = handshake else {
        return None;
    };
    if *kind != CLIENT_HELLO {
        return Some(Hello::Unreadable(
            "the first handshake message is not a ClientHello",
        ));
    }
    let length = usize::from(*a) << 16 | usize::from(*b) << 8 | usize::from(*c);
    if length > HELLO_LIMIT {
        return Some(Hello::Unreadable("a ClientHello past the limit"));
    }
    let body = body.get(..length)?;
    Some(match server_name(body) {
        Ok(name) => Hello::Named(name),
        Err(why) => Hello::Unreadable(why),
    })
}

/// The server name a ClientHello's body gives, read strictly.
fn server_name(body: &[u8]) -> Result<Option<Vec<u8>>, &'static str> {
    let mut reader = Reader(body);
    reader.take(2 + 32).ok_or("a ClientHello cut short")?;
    for width in [1, 2, 1] {
        // The session ID, the cipher suites, the compression methods.
        reader.vector(width).ok_or("a ClientHello cut short")?;
    }
    if reader.0.is_empty() {
        return Ok(None);
    }
    let mut extensions = Reader(
        reader
            .vector(2)
            .ok_or("a ClientHello whose extensions are cut short")?,
    );
    if !reader.0.is_empty() {
        return Err("bytes after a ClientHello's extensions");
    }
    let mut name = None;
    while !extensions.0.is_empty() {
        let kind = extensions.u16().ok_or("an extension cut short")?;
        let data = extensions.vector(2).ok_or("an extension cut short")?;
        if kind != SERVER_NAME {
            continue;
        }
        if name.is_some() {
            return Err("two server_name extensions");
        }
        let mut list = Reader(data);
        let mut names = Reader(list.vector(2).ok_or("a server_name extension cut short")?);
        if !list.0.is_empty() {
            return Err("bytes after a server_name list");
        }
        let kind = names.take(1).ok_or("an empty server_name list")?;
        if kind != [0] {
            return Err("a server_name that is not a host name");
        }
        let host = names.vector(2).ok_or("a server_name cut short")?;
        if !names.0.is_empty() {
            return Err("more than one server_name");
        }
        name = Some(host.to_vec());
    }
    Ok(name)
}

/// Bytes read front to back.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, count: usize) -> Option<&'a [u8]> {
        if self.0.len() < count {
            return None;
        }
        let (taken, rest) = self.0.split_at(count);
        self.0 = rest;
        Some(taken)
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|two| u16::from_be_bytes([two[0], two[1]]))
    }

    /// A vector whose length comes first, in `width` bytes (1 or 2).
    fn vector(&mut self, width: usize) -> Option<&'a [u8]> {
        let length = match width {
            1 => usize::from(self.take(1)?[0]),
            _ => usize::from(self.u16()?),
        };
        self.take(length)
    }
}

/// Whether `named` (a hello's server name) is `host`, the tunnel's: the same bytes but for
/// ASCII case and one trailing dot on either (a fully qualified spelling of the same name).
pub(super) fn names_host(named: &[u8], host: &str) -> bool {
    let trim = |name: &[u8]| -> Vec<u8> {
        let name = name.strip_suffix(b".").unwrap_or(name);
        name.to_ascii_lowercase()
    };
    trim(named) == trim(host.as_bytes())
}

/// A hello's name as a person reads it: control bytes and what is not UTF-8 escaped, and cut
/// to 255 bytes (a DNS name's most).
pub(super) fn shown(named: &[u8]) -> String {
    let cut = &named[..named.len().min(255)];
    let mut text: String = String::from_utf8_lossy(cut).escape_debug().collect();
    if cut.len() < named.len() {
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A ClientHello's body with `extensions` (type, data) in order.
    fn body(extensions: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend([7u8; 32]);
        body.extend([0, 0, 2, 0x13, 0x01, 1, 0]);
        let mut list = Vec::new();
        for (kind, data) in extensions {
            list.extend(kind.to_be_bytes());
            list.extend(u16::try_from(data.len()).unwrap().to_be_bytes());
            list.extend(data);
        }
        body.extend(u16::try_from(list.len()).unwrap().to_be_bytes());
        body.extend(list);
        body
    }

    fn sni(name: &[u8]) -> Vec<u8> {
        let mut entry = vec![0];
        entry.extend(u16::try_from(name.len()).unwrap().to_be_bytes());
        entry.extend(name);
        let mut data = u16::try_from(entry.len()).unwrap().to_be_bytes().to_vec();
        data.extend(entry);
        data
    }

    /// The hello as records of at most `fragment` bytes each.
    fn records(body: &[u8], fragment: usize) -> Vec<u8> {
        let mut message = vec![CLIENT_HELLO];
        message.extend(&u32::try_from(body.len()).unwrap().to_be_bytes()[1..]);
        message.extend(body);
        let mut bytes = Vec::new();
        for piece in message.chunks(fragment) {
            bytes.extend([HANDSHAKE, 3, 1]);
            bytes.extend(u16::try_from(piece.len()).unwrap().to_be_bytes());
            bytes.extend(piece);
        }
        bytes
    }

    #[test]
    fn a_name_is_read_however_the_hello_is_cut_and_fed() {
        let hello = records(
            &body(&[(10, vec![0, 2, 0, 29]), (SERVER_NAME, sni(b"a.test"))]),
            7,
        );
        for end in 0..hello.len() {
            assert_eq!(read(&hello[..end]), Hello::Partial, "{end}");
        }
        assert_eq!(read(&hello), Hello::Named(Some(b"a.test".to_vec())));
        assert_eq!(read(&records(&body(&[]), 1000)), Hello::Named(None));
        // Past one record (16 KiB), with an empty record first: still read whole.
        let big = body(&[(21, vec![0; 20_000]), (SERVER_NAME, sni(b"a.test"))]);
        let mut empty_first = vec![HANDSHAKE, 3, 1, 0, 0];
        empty_first.extend(records(&big, MAX_FRAGMENT));
        assert_eq!(read(&empty_first), Hello::Named(Some(b"a.test".to_vec())));
        assert_eq!(read(b"SSH-2.0-x\r\n"), Hello::NotTls);
    }

    #[test]
    fn what_cannot_be_read_whole_is_unreadable() {
        let two = body(&[(SERVER_NAME, sni(b"a.test")), (SERVER_NAME, sni(b"b.test"))]);
        let mut two_entries = sni(b"a.test");
        two_entries.extend([0, 0, 1, b'b']);
        let length = u16::try_from(two_entries.len() - 2).unwrap().to_be_bytes();
        two_entries[..2].copy_from_slice(&length);
        let mut alert_first = vec![21, 3, 3, 0, 2, 1, 0];
        alert_first.extend(records(&body(&[]), 100));
        for (what, bytes) in [
            ("two extensions", records(&two, 100)),
            (
                "two names",
                records(&body(&[(SERVER_NAME, two_entries)]), 100),
            ),
            (
                "past the limit",
                vec![HANDSHAKE, 3, 1, 0, 4, CLIENT_HELLO, 1, 0, 1],
            ),
            ("an alert first", alert_first),
        ] {
            assert!(matches!(read(&bytes), Hello::Unreadable(_)), "{what}");
        }
        let endless = [HANDSHAKE, 3, 1, 0, 0].repeat(READ_LIMIT / 5 + 1);
        assert!(matches!(read(&endless), Hello::Unreadable(_)));
    }

    proptest::proptest! {
        /// Whatever the bytes and however they are cut, the reading is the same, and no
        /// prefix of a hello is taken for a whole one with another name.
        #[test]
        fn the_reading_does_not_depend_on_how_the_bytes_are_cut(
            extra in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
            flips in proptest::collection::vec((0usize..400, proptest::num::u8::ANY), 0..4),
            chunk in 1usize..64,
        ) {
            let mut bytes = records(&body(&[(99, extra), (SERVER_NAME, sni(b"a.test"))]), 90);
            for (at, byte) in flips {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            let mut verdict = Hello::Partial;
            let mut end = 0;
            while end < bytes.len() && verdict == Hello::Partial {
                end = (end + chunk).min(bytes.len());
                verdict = read(&bytes[..end]);
            }
            let whole = read(&bytes);
            let settled = |hello: &Hello| !matches!(hello, Hello::Partial);
            proptest::prop_assert!(!settled(&whole) || verdict == whole, "{verdict:?} / {whole:?}");
        }
    }

    #[test]
    fn a_name_is_the_host_only_byte_for_byte_but_case_and_one_final_dot() {
        assert!(names_host(b"Registry.Test", "registry.test"));
        assert!(names_host(b"registry.test.", "registry.test"));
        for other in [
            &b"registry.test.."[..],
            b"registry..test",
            b"registry.test:443",
            b" registry.test",
            b"registry.test\0",
        ] {
            assert!(!names_host(other, "registry.test"), "{other:?}");
        }
        assert_eq!(shown(b"a\x1b[2Jb\xff"), "a\\u{1b}[2Jb\u{fffd}");
    }
}
