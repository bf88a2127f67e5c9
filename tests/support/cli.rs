//! Driving the built `golato` binary as a person or a script would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The binary, with none of the provider, colour or log variables of the environment the tests
/// run in, so each test sets exactly what it means to.
pub fn golato() -> Command {
    let mut command = Command::new(super::golato_binary());
    for variable in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_MODEL",
        "NO_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "RUST_LOG",
    ] {
        command.env_remove(variable);
    }
    // Sessions go to a directory of this test binary's own, never the user's; the user's
    // configuration file is not read (a test that wants one sets GOLATO_CONFIG).
    command.env("GOLATO_DATA_DIR", data_dir());
    command.env("GOLATO_CONFIG", data_dir().join("no-config.toml"));
    command.env("CLAUDE_CONFIG_DIR", data_dir().join("no-claude"));
    command
}

/// Where the binary saves sessions in the tests: one temporary directory per test binary.
pub fn data_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// A directory under none of workspace-write's own writable places (the working directory,
/// `/tmp`): the build's temporary directory, or `/var/tmp` when that one is under `/tmp` (as
/// with a `CARGO_TARGET_DIR` there).
pub fn outside_dir() -> tempfile::TempDir {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let base = if base.canonicalize().unwrap().starts_with("/tmp") {
        PathBuf::from("/var/tmp")
    } else {
        base
    };
    tempfile::tempdir_in(base).unwrap()
}

/// Runs the binary with `args` to its end.
pub fn golato_output(args: &[&str]) -> Output {
    golato().args(args).output().unwrap()
}

/// `golato run FLAGS --cwd DIR --script SCRIPT go`, run to its end.
pub fn run_script(dir: &Path, script: &Path, flags: &[&str]) -> Output {
    let mut args = vec!["run"];
    args.extend_from_slice(flags);
    let (dir, script) = (dir.to_str().unwrap(), script.to_str().unwrap());
    args.extend(["--cwd", dir, "--script", script, "go"]);
    golato_output(&args)
}

/// Writes a script of JSONL `entries` into `dir` and returns its path.
pub fn script_file(dir: &Path, name: &str, entries: &[Value]) -> PathBuf {
    let path = dir.join(name);
    let text: String = entries.iter().map(|entry| format!("{entry}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// Every line of stdout parsed as JSON; fails the test on a line that is not.
pub fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"))
        })
        .collect()
}

/// The lines of the given `"type"`.
pub fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|line| line["type"] == kind).collect()
}

/// Whether `line` is the header `golato run` prints before a run (what it uses).
pub fn is_header(line: &str) -> bool {
    line.starts_with("golato: ") && line.contains(" · cwd ") && line.contains(" · tools ")
}

/// Stderr past the header, which must be a single line starting `golato: ` (no backtrace, no
/// panic).
pub fn one_error_line(output: &Output) -> String {
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    let lines: Vec<&str> = stderr.lines().filter(|line| !is_header(line)).collect();
    assert_eq!(lines.len(), 1, "stderr should be one line, got: {stderr}");
    assert!(lines[0].starts_with("golato: "), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    lines[0].to_owned()
}

/// Standard error: where a piped run's story goes (header, live view, summary).
pub fn story(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// A program running on a pseudo terminal, as a person at a terminal runs it: what it draws is
/// collected, lines are typed at it.
pub struct Terminal {
    master: std::fs::File,
    screen: std::sync::mpsc::Receiver<Vec<u8>>,
    drawn: Vec<u8>,
    pub child: std::process::Child,
    /// The size (rows, columns) now: `answer` sees it change with `resize`.
    size: std::sync::Arc<std::sync::Mutex<(u16, u16)>>,
    /// Set: the terminal reads nothing (a stalled connection), until cleared.
    paused: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// A pseudo terminal of 30 rows and 120 columns: the master side, and the path of the side the
/// program gets.
pub fn pty() -> (std::os::fd::OwnedFd, PathBuf) {
    pty_sized(30, 120)
}

/// A pseudo terminal of `rows` × `columns`.
pub fn pty_sized(rows: u16, columns: u16) -> (std::os::fd::OwnedFd, PathBuf) {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    // CLOEXEC: the program must not hold the master too, or the terminal never closes for it.
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let size = rustix::termios::Winsize {
        ws_row: rows,
        ws_col: columns,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    rustix::termios::tcsetwinsize(&master, size).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    (master, name.into_string().unwrap().into())
}

/// A test that fails (panics) before the program ends leaves no program running behind it.
impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Terminal {
    /// Starts `command` with the terminal as its standard input, output and error.
    pub fn start(command: Command) -> Terminal {
        Terminal::start_sized(command, 30, 120)
    }

    /// Starts `command` on a terminal of `rows` × `columns`.
    pub fn start_sized(command: Command, rows: u16, columns: u16) -> Terminal {
        Terminal::start_answering(command, rows, columns, |_, _| None)
    }

    /// Starts `command` on a terminal of `rows` × `columns` that answers the program as a
    /// terminal does: `answer` sees each chunk the program writes, with the terminal's size
    /// then, and returns what the terminal replies (to a cursor position query, say).
    pub fn start_answering(
        mut command: Command,
        rows: u16,
        columns: u16,
        mut answer: impl FnMut(&[u8], (u16, u16)) -> Option<Vec<u8>> + Send + 'static,
    ) -> Terminal {
        use std::io::{Read as _, Write as _};
        let (master, slave_path) = pty_sized(rows, columns);
        let slave = || {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&slave_path)
                .unwrap()
        };
        // vt100, the emulator the tests read the screen through, re-wraps nothing on a resize,
        // as xterm: no variable of the terminal the tests run in may say otherwise.
        for variable in golato_cli_rewrapping_markers() {
            command.env_remove(variable);
        }
        command
            .env("TERM", "xterm-256color")
            .stdin(slave())
            .stdout(slave())
            .stderr(slave());
        let child = command.spawn().unwrap();
        drop(command);
        let master = std::fs::File::from(master);
        let mut reader = master.try_clone().unwrap();
        let mut replier = master.try_clone().unwrap();
        let (sender, screen) = std::sync::mpsc::channel();
        let size = std::sync::Arc::new(std::sync::Mutex::new((rows, columns)));
        let size_now = size.clone();
        let paused = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let paused_now = paused.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // Reading fails (EIO) once the program and its children closed the terminal.
            loop {
                if paused_now.load(std::sync::atomic::Ordering::Acquire) {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    continue;
                }
                let Ok(count) = reader.read(&mut buffer) else {
                    break;
                };
                if count == 0 {
                    break;
                }
                let now = *size_now.lock().unwrap();
                if let Some(reply) = answer(&buffer[..count], now) {
                    let _ = replier.write_all(&reply);
                }
                if sender.send(buffer[..count].to_vec()).is_err() {
                    break;
                }
            }
        });
        Terminal {
            master,
            screen,
            drawn: Vec::new(),
            child,
            size,
            paused,
        }
    }

    /// The master side of the terminal (its unread bytes, its size).
    pub fn master(&self) -> &std::fs::File {
        &self.master
    }

    /// Stops reading what the program writes (`true`), as a stalled terminal does, or reads
    /// again (`false`).
    pub fn pause(&self, paused: bool) {
        self.paused
            .store(paused, std::sync::atomic::Ordering::Release);
    }

    /// Makes the terminal `rows` × `columns`, as a person dragging its window does: the new
    /// size, then SIGWINCH to the program (the kernel sends it only to a terminal's session,
    /// which the program under test is not).
    pub fn resize(&mut self, rows: u16, columns: u16) {
        *self.size.lock().unwrap() = (rows, columns);
        let size = rustix::termios::Winsize {
            ws_row: rows,
            ws_col: columns,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        rustix::termios::tcsetwinsize(&self.master, size).unwrap();
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::WINCH).unwrap();
    }

    /// Everything drawn so far, as bytes (for a terminal emulator to replay).
    pub fn drawn_bytes(&self) -> &[u8] {
        &self.drawn
    }

    /// Takes in what the program drew since, without waiting.
    pub fn catch_up(&mut self) {
        while let Ok(chunk) = self.screen.try_recv() {
            self.drawn.extend(chunk);
        }
    }

    /// Everything drawn so far.
    pub fn drawn(&self) -> String {
        String::from_utf8_lossy(&self.drawn).into_owned()
    }

    /// Waits until the screen shows `text` `times` times in all.
    pub fn wait_for(&mut self, text: &str, times: usize) {
        let started = std::time::Instant::now();
        while self.drawn().matches(text).count() < times {
            assert!(
                started.elapsed() < super::HANG_GUARD,
                "{text:?} never showed: {:?}",
                self.drawn()
            );
            if let Ok(chunk) = self.screen.recv_timeout(super::HANG_GUARD) {
                self.drawn.extend(chunk);
            }
        }
    }

    /// Types `text` as it is (control characters included: `\x04` is Ctrl-D).
    pub fn type_raw(&mut self, text: &str) {
        use std::io::Write as _;
        self.master.write_all(text.as_bytes()).unwrap();
    }

    /// Types raw bytes (a line that is not UTF-8, say).
    pub fn type_bytes(&mut self, bytes: &[u8]) {
        use std::io::Write as _;
        self.master.write_all(bytes).unwrap();
    }

    /// Types `line` and Enter.
    pub fn type_line(&mut self, line: &str) {
        use std::io::Write as _;
        self.master
            .write_all(format!("{line}\r").as_bytes())
            .unwrap();
    }

    /// Waits for the program to exit; returns its exit code and everything it drew.
    pub fn finish(mut self) -> (Option<i32>, String) {
        // Bounded: a program that does not exit fails the test with what it drew, instead of
        // holding the whole suite.
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > super::HANG_GUARD {
                let _ = self.child.kill();
                let _ = self.child.wait();
                while let Ok(chunk) = self.screen.try_recv() {
                    self.drawn.extend(chunk);
                }
                panic!(
                    "the program did not exit within {:?} of its end being asked for; it drew:\n{}",
                    super::HANG_GUARD,
                    self.drawn()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        while let Ok(chunk) = self
            .screen
            .recv_timeout(std::time::Duration::from_millis(300))
        {
            self.drawn.extend(chunk);
        }
        (status.code(), self.drawn())
    }
}

/// The session ID the header line on standard error names.
pub fn session_id(stderr: &[u8]) -> String {
    let stderr = String::from_utf8_lossy(stderr);
    let header = stderr.lines().find(|line| is_header(line)).unwrap();
    header
        .rsplit_once(" · session ")
        .map(|(_, id)| id.to_owned())
        .unwrap_or_else(|| panic!("no session in {header}"))
}

/// The saved session whose header names `dir` as its working directory, if one is saved.
pub fn session_file(dir: &Path) -> Option<PathBuf> {
    let cwd = serde_json::json!(dir.canonicalize().unwrap());
    std::fs::read_dir(data_dir().join("sessions"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "jsonl")
        })
        .find(|path| {
            std::fs::read_to_string(path)
                .unwrap_or_default()
                .lines()
                .next()
                .is_some_and(|header| header.contains(&format!("\"cwd\":{cwd}")))
        })
}

/// The variables by which golato's front end knows a terminal that re-wraps its lines on a
/// resize (`REWRAPPING_MARKERS` and `TERM_PROGRAM` in `cli/src/front/screen.rs`).
pub fn golato_cli_rewrapping_markers() -> [&'static str; 8] {
    [
        "TMUX",
        "VTE_VERSION",
        "KITTY_WINDOW_ID",
        "WT_SESSION",
        "KONSOLE_VERSION",
        "ALACRITTY_WINDOW_ID",
        "WEZTERM_PANE",
        "TERM_PROGRAM",
    ]
}
