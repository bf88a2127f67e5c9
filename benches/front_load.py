"""What the front end costs while a run works, on a 120x40 pseudo terminal (the cursor query
answered as a terminal does), against a local OpenAI-compatible server that streams as a real
one does:

  stream:   one answer of 600 tokens at 100 tokens a second (6 s). golato's CPU time over the
            run, as a share of one core, in the front end and in `golato run` writing to a pipe
            (the same run with no screen to draw): the difference is what the front end adds.
  parallel: 16 bash calls at once, each printing a line every 0.1 s for 3 s. Frames drawn a
            second (each frame ends by showing the cursor again), bytes written to the terminal
            a second, full-screen clears (a flicker: there must be none), CPU share.

python3 benches/front_load.py target/release/golato   (after cargo build --release)
"""
import fcntl, http.server, json, os, pty, select, struct, subprocess, sys, tempfile, termios, threading, time

binary = os.path.abspath(sys.argv[1])
RATE = 100  # tokens a second
TOKENS = 600
CALLS = 16


def chunk(delta, finish=None):
    body = {"id": "x", "object": "chat.completion.chunk", "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return ("data: " + json.dumps(body) + "\n\n").encode()


class Model(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    scenario = "stream"

    def log_message(self, *args):
        pass

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answered = any(m.get("role") == "tool" for m in request["messages"])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        send(chunk({"role": "assistant", "content": ""}))
        if Model.scenario == "parallel" and not answered:
            command = "for i in $(seq 30); do echo line $i; sleep 0.1; done"
            calls = [{"index": i, "id": "call_%d" % i, "type": "function",
                      "function": {"name": "bash", "arguments": json.dumps({"command": command})}}
                     for i in range(CALLS)]
            send(chunk({"tool_calls": calls}))
            send(chunk({}, "tool_calls"))
        elif Model.scenario == "stream":
            for i in range(TOKENS):
                send(chunk({"content": (" word" if i % 12 else "\n\nword")}))
                time.sleep(1 / RATE)
            send(chunk({}, "stop"))
        else:
            send(chunk({"content": "All done."}))
            send(chunk({}, "stop"))
        send(b"data: [DONE]\n\n")
        send(b"")


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
threading.Thread(target=server.serve_forever, daemon=True).start()
base = "http://127.0.0.1:%d/v1" % server.server_address[1]
work = tempfile.mkdtemp()
env = dict(os.environ, TERM="xterm-256color", GOLATO_DATA_DIR=work + "/data",
           GOLATO_CONFIG="/nonexistent")
flags = ["--provider", "openai", "--base-url", base, "--model", "fake", "--ephemeral",
         "--no-compact", "-C", work]


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    # utime and stime (ticks): golato's own, not the tools it waited for.
    own = int(fields[11]) + int(fields[12])
    return own / os.sysconf("SC_CLK_TCK")


def front(scenario):
    Model.scenario = scenario
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(binary, [binary] + flags, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    seen = bytearray()

    def read_until(marker, after=0, timeout=60):
        deadline = time.monotonic() + timeout
        while marker not in seen[after:]:
            r, _, _ = select.select([fd], [], [], max(0, deadline - time.monotonic()))
            if not r:
                raise SystemExit("timed out waiting for %r:\n%s" % (marker, seen.decode(errors="replace")[-2000:]))
            data = os.read(fd, 65536)
            if b"\x1b[6n" in data:
                os.write(fd, b"\x1b[1;1R")
            seen.extend(data)

    read_until(b"Enter send")
    before = len(seen)
    cpu0, wall0 = cpu_seconds(pid), time.monotonic()
    os.write(fd, b"go\r")
    read_until(b"done: ", before)
    wall, cpu = time.monotonic() - wall0, cpu_seconds(pid) - cpu0
    written = bytes(seen[before:])
    os.write(fd, b"\x04")
    os.waitpid(pid, 0)
    os.close(fd)
    return wall, cpu, written


def run_cpu(scenario):
    """`golato run` to a pipe: wall, and golato's own CPU (sampled from /proc until it exits,
    so that the bash commands it waits for are not counted)."""
    Model.scenario = scenario
    started = time.monotonic()
    process = subprocess.Popen([binary, "run"] + flags + ["go"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cpu = 0.0
    while process.poll() is None:
        try:
            cpu = cpu_seconds(process.pid)
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass
        time.sleep(0.02)
    return time.monotonic() - started, cpu


for scenario in ["stream", "parallel"]:
    wall, cpu, written = front(scenario)
    frames = written.count(b"\x1b[?25h")
    clears = written.count(b"\x1b[2J")
    print("%s, front end: %.1f s, CPU %.1f%% of a core, %d frames (%.0f/s), %d KiB written (%.1f KiB/s), %d full clears"
          % (scenario, wall, 100 * cpu / wall, frames, frames / wall, len(written) / 1024,
             len(written) / 1024 / wall, clears))
    wall, cpu = run_cpu(scenario)
    print("%s, golato run to a pipe: %.1f s, CPU %.1f%% of a core" % (scenario, wall, 100 * cpu / wall))
