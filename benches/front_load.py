"""What the front end costs while a run works, on a 120x40 pseudo terminal (the cursor query
answered as a terminal does), against a local OpenAI-compatible server that streams as a real
one does:

  stream:   one answer of 600 tokens at 100 tokens a second (6 s). golato's CPU time over the
            run, as a share of one core, in the front end and in `golato run` writing to a pipe
            (the same run with no screen to draw): the difference is what the front end adds.
  parallel: 16 bash calls at once, each printing a line every 0.1 s for 3 s. Frames drawn a
            second (each frame ends by showing the cursor again), bytes written to the terminal
            a second, full-screen clears (a flicker: there must be none), CPU share.

  Latency, token to screen: each token of the stream is a character used nowhere else (a CJK
  ideograph), and each line the first call prints carries one too, with the wall-clock time it
  was printed. The time a token's character first reaches the terminal, less the time the
  server sent it (or the command printed it), is its latency; p50, p99 and max over the run.
  Lines of a call the status line never showed (a newer one came within the same frame) are
  counted apart: the status line shows the newest line of the first running call only.

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
            # The first call's lines: a character of their own each, and when they were printed.
            # U+5000 + i is E5 80 (80 + i) in UTF-8: made by printf, so that the command's
            # own text (shown while it runs) holds none of the characters.
            first = ("for i in $(seq 0 29); do b=$(printf %x $((0x80 + i))); "
                     "printf \"\\xe5\\x80\\x$b %s\\n\" $(date +%s.%N) >> times.txt; "
                     "printf \"line \\xe5\\x80\\x$b\\n\"; sleep 0.1; done")
            calls = [{"index": i, "id": "call_%d" % i, "type": "function",
                      "function": {"name": "bash", "arguments": json.dumps(
                          {"command": first if i == 0 else command})}}
                     for i in range(CALLS)]
            send(chunk({"tool_calls": calls}))
            send(chunk({}, "tool_calls"))
        elif Model.scenario == "stream":
            for i in range(TOKENS):
                mark = chr(0x4E00 + i)
                sent_at[mark] = time.time()
                send(chunk({"content": (" w" + mark if i % 12 else "\n\nw" + mark)}))
                time.sleep(1 / RATE)
            send(chunk({}, "stop"))
        else:
            send(chunk({"content": "All done."}))
            send(chunk({}, "stop"))
        send(b"data: [DONE]\n\n")
        send(b"")


# When the server sent each token's character (stream), by character.
sent_at = {}

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
    if os.path.exists(os.path.join(work, "times.txt")):
        os.remove(os.path.join(work, "times.txt"))
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(binary, [binary] + flags, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    seen = bytearray()
    # When each byte count of `seen` was reached: (length after a read, wall-clock time).
    reads = []

    def read_until(marker, after=0, timeout=60):
        deadline = time.monotonic() + timeout
        while marker not in seen[after:]:
            r, _, _ = select.select([fd], [], [], max(0, deadline - time.monotonic()))
            if not r:
                raise SystemExit("timed out waiting for %r:\n%s" % (marker, seen.decode(errors="replace")[-2000:]))
            data = os.read(fd, 65536)
            now = time.time()
            if b"\x1b[6n" in data:
                os.write(fd, b"\x1b[1;1R")
            seen.extend(data)
            reads.append((len(seen), now))

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
    return wall, cpu, written, shown_at(bytes(seen), reads)


def shown_at(seen, reads):
    """When each marking character first reached the terminal, by character."""
    import bisect
    ends = [end for end, _ in reads]
    found = {}
    for code in list(range(0x4E00, 0x4E00 + TOKENS)) + list(range(0x5000, 0x5000 + 30)):
        at = seen.find(chr(code).encode())
        if at >= 0:
            found[chr(code)] = reads[bisect.bisect_right(ends, at)][1]
    return found


def printed_at():
    """When the first call printed each of its lines (it notes the time in times.txt)."""
    printed = {}
    for line in open(os.path.join(work, "times.txt"), encoding="utf-8"):
        mark, at = line.split()
        printed[mark] = float(at)
    return printed


def percentiles(latencies):
    latencies = sorted(latencies)
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
    return "p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d" % (
        1000 * pick(0.5), 1000 * pick(0.99), 1000 * latencies[-1], len(latencies))


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
    wall, cpu, written, shown = front(scenario)
    if scenario == "stream":
        latencies = [shown[mark] - sent for mark, sent in sent_at.items() if mark in shown]
        print("stream, token to screen: %s (%d of %d tokens seen)" % (
            percentiles(latencies), len(latencies), len(sent_at)))
    else:
        printed = printed_at()
        latencies = [shown[mark] - at for mark, at in printed.items() if mark in shown]
        print("parallel, first call's line to screen: %s; %d of 30 lines shown" % (
            percentiles(latencies) if latencies else "none", len(latencies)))
    frames = written.count(b"\x1b[?25h")
    clears = written.count(b"\x1b[2J")
    print("%s, front end: %.1f s, CPU %.1f%% of a core, %d frames (%.0f/s), %d KiB written (%.1f KiB/s), %d full clears"
          % (scenario, wall, 100 * cpu / wall, frames, frames / wall, len(written) / 1024,
             len(written) / 1024 / wall, clears))
    wall, cpu = run_cpu(scenario)
    print("%s, golato run to a pipe: %.1f s, CPU %.1f%% of a core" % (scenario, wall, 100 * cpu / wall))
