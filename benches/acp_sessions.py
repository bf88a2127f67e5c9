"""100 ACP sessions at once in one `golato acp` process, each a 2-turn scripted run of 4 calls
(read, and three bash commands), all prompts sent together: wall time to the last answer,
time from each prompt to its session's first update (p50, p99), and the process's peak memory.

python3 benches/acp_sessions.py target/release/golato [SESSIONS]   (after cargo build --release)
"""
import json, os, subprocess, sys, tempfile, threading, time

binary = os.path.abspath(sys.argv[1])
sessions = int(sys.argv[2]) if len(sys.argv) > 2 else 100
work = tempfile.mkdtemp()
with open(os.path.join(work, "notes.txt"), "w") as f:
    f.write("alpha\nbeta\n")
script = os.path.join(work, "script.jsonl")
with open(script, "w") as f:
    calls = [{"id": "r", "name": "read", "arguments": {"path": "notes.txt"}}] + [
        {"id": "b%d" % i, "name": "bash", "arguments": {"command": "echo %d" % i}} for i in range(3)]
    f.write(json.dumps({"text": "Looking.", "tool_calls": calls}) + "\n")
    f.write(json.dumps({"text": "Done."}) + "\n")

process = subprocess.Popen([binary, "acp", "--ephemeral", "--script", script, "--approve", "never"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=work,
                           env=dict(os.environ, GOLATO_DATA_DIR=work + "/data", GOLATO_CONFIG="/nonexistent"))
lock = threading.Lock()
responses, first_update, done_at = {}, {}, {}
events = {}


def reader():
    for line in process.stdout:
        message = json.loads(line)
        now = time.monotonic()
        with lock:
            if message.get("method") == "session/update":
                first_update.setdefault(message["params"]["sessionId"], now)
            elif "id" in message:
                responses[message["id"]] = message
                done_at[message["id"]] = now
                if message["id"] in events:
                    events[message["id"]].set()


threading.Thread(target=reader, daemon=True).start()
next_id = [0]


def request(method, params, wait=True):
    with lock:
        next_id[0] += 1
        ident = next_id[0]
        events[ident] = threading.Event()
    process.stdin.write((json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}) + "\n").encode())
    process.stdin.flush()
    if wait:
        events[ident].wait(60)
        return responses[ident]
    return ident


request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
ids = [request("session/new", {"cwd": work, "mcpServers": []})["result"]["sessionId"] for _ in range(sessions)]
started = time.monotonic()
sent = {}
prompts = []
for session in ids:
    sent[session] = time.monotonic()
    prompts.append((session, request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}, wait=False)))
for _, ident in prompts:
    events[ident].wait(120)
wall = time.monotonic() - started
ok = sum(1 for _, ident in prompts if responses[ident].get("result", {}).get("stopReason") == "end_turn")
peak = 0
for line in open("/proc/%d/status" % process.pid):
    if line.startswith("VmHWM:"):
        peak = int(line.split()[1]) / 1024
process.stdin.close()
process.wait()
latency = sorted((first_update[s] - sent[s]) * 1000 for s in ids)
p = lambda q: latency[min(len(latency) - 1, int(q * len(latency)))]
print("%d sessions, %d ended their turn: wall %.2f s, prompt to first update p50 %.1f ms p99 %.1f ms, peak RSS %.0f MiB"
      % (sessions, ok, wall, p(0.5), p(0.99), peak))
