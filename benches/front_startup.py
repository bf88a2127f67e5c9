"""Time from starting `golato` on an 80x24 pseudo terminal to its usable prompt (the key line
drawn), answering the cursor-position query as a terminal does; 10 starts.

python3 benches/front_startup.py target/release/golato   (after cargo build --release)
"""
import os, pty, sys, time, select, struct, fcntl, termios
binary = sys.argv[1]
times = []
for _ in range(10):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.environ["GOLATO_DATA_DIR"] = "/tmp/startup-data"
        os.environ["GOLATO_CONFIG"] = "/nonexistent"
        os.execv(binary, [binary, "--ephemeral", "--script", "cli/demo/session.jsonl", "-C", "/tmp"])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    start = time.monotonic()
    seen = b""
    while b"Enter send" not in seen:
        r, _, _ = select.select([fd], [], [], 5)
        if not r: break
        data = os.read(fd, 65536)
        seen += data
        if b"\x1b[6n" in data:
            os.write(fd, b"\x1b[1;1R")
    times.append((time.monotonic() - start) * 1000)
    os.write(fd, b"\x04")
    os.waitpid(pid, 0)
times.sort()
print("ms to a usable prompt: min %.1f median %.1f max %.1f" % (times[0], times[len(times)//2], times[-1]))
