#!/usr/bin/env python3
"""What --approve auto's review adds to a call: N calls (each its own turn) that an ask rule
would hold, replayed by `golato run --script --json`, reviewed by a loopback model server that
answers at once (so the figure is golato's own cost: the request built, sent, streamed back,
parsed, told), against the same calls let through by an allow rule. R rounds each; prints the
medians, the difference per call, the reviews' own latency as golato measured it, and the
peak memory of each run.

    python3 benches/review_cost.py target/release/golato [N] [R]
"""
import http.server, json, os, resource, statistics, subprocess, sys, tempfile, threading, time

golato = os.path.abspath(sys.argv[1])
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 200
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5

VERDICT = json.dumps({"decision": "allow", "risk": "low", "rationale": "Fine.", "authorized_by": ""})
BODY = "".join(
    f"data: {json.dumps(chunk)}\n\n"
    for chunk in [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": VERDICT}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
) + "data: [DONE]\n\n"


class Reviewer(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are separate writes: with Nagle's algorithm each answer would wait for
    # the client's delayed ACK (40 ms), which is this server's cost, not golato's.
    disable_nagle_algorithm = True

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = BODY.encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Reviewer)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/v1"


def timed(flags):
    with tempfile.TemporaryDirectory() as work:
        script = os.path.join(work, "script.jsonl")
        with open(script, "w") as out:
            for n in range(calls):
                call = {"id": f"c{n}", "name": "bash", "arguments": {"command": f"true {n}"}}
                out.write(json.dumps({"tool_calls": [call]}) + "\n")
            out.write(json.dumps({"text": "done"}) + "\n")
        started = time.monotonic()
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        done = subprocess.run(
            [golato, "run", "--json", "--ephemeral", "--cwd", work, "--script", script,
             "--reviewer-base-url", url, "--reviewer-model", "judge", *flags, "go"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True)
        wall = time.monotonic() - started
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        latencies = [json.loads(line)["latency_ms"] for line in done.stdout.splitlines()
                     if line.startswith('{"') and '"type":"review"' in line]
        return wall, latencies, max(peak, before)


reviewed, allowed, latencies, peaks = [], [], [], []
for _ in range(rounds):
    wall, lat, peak = timed(["--approve", "auto", "--ask", "bash(true *)"])
    assert len(lat) == calls, f"{len(lat)} reviews for {calls} calls"
    reviewed.append(wall); latencies.extend(lat); peaks.append(peak)
    wall, lat, _ = timed(["--approve", "never", "--allow", "bash(true *)"])
    assert not lat
    allowed.append(wall)
a, b = statistics.median(reviewed), statistics.median(allowed)
latencies.sort()
print(json.dumps({
    "calls": calls, "rounds": rounds,
    "reviewed_s": round(a, 3), "allowed_s": round(b, 3),
    "added_per_call_ms": round((a - b) / calls * 1000, 2),
    "review_latency_ms_p50": latencies[len(latencies) // 2],
    "review_latency_ms_p99": latencies[min(len(latencies) - 1, len(latencies) * 99 // 100)],
    "peak_rss_kib_max": max(peaks),
}))
