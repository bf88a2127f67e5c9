"""What deciding a durable question once costs (issue 54 point 3): QUESTIONS questions of one
run started on a worker (`golato serve`) through the ingress, then each answered yes through
the ingress one after another, its verdict then read by attaching to its workflow. Each
binary given gets its own server and worker, in turn, SITTINGS times (an older golato, where an
answer resolved the workflow's promise directly, against this one, where it goes through the
question's `GolatoAnswers` object). Prints per sitting and binary: p50 and p99 of an answer's
round trip, and of the answer to its verdict.

GOLATO_RESTATE_SERVER=.../bin/restate-server \\
    python3 benches/answer_cost.py OLD/golato NEW/golato [QUESTIONS] [SITTINGS]
"""
import json, os, socket, subprocess, sys, tempfile, time, urllib.request

binaries = [os.path.abspath(path) for path in sys.argv[1:3]]
questions = int(sys.argv[3]) if len(sys.argv) > 3 else 200
sittings = int(sys.argv[4]) if len(sys.argv) > 4 else 3
server_binary = os.environ["GOLATO_RESTATE_SERVER"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, seconds=120):
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > seconds:
            raise SystemExit(f"{what} did not happen")
        time.sleep(0.05)


def healthy(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return b" 200 " in s.recv(100)
    except OSError:
        return False


def post(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    # A handler that takes no input refuses a body, and a content type without one.
    headers = {} if body is None else {"content-type": "application/json"}
    request = urllib.request.Request(url, data=data, method="POST", headers=headers)
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read()


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def sitting(binary):
    work = tempfile.mkdtemp()
    node, ingress, admin = free_port(), free_port(), free_port()
    env = dict(os.environ, RESTATE_BASE_DIR=os.path.join(work, "data"),
               RESTATE_LISTEN_MODE="tcp",
               RESTATE_INGRESS__BIND_ADDRESS=f"127.0.0.1:{ingress}",
               RESTATE_ADMIN__BIND_ADDRESS=f"127.0.0.1:{admin}",
               RESTATE_ADMIN__QUERY_ENGINE__PGSQL_BIND_ADDRESS=f"127.0.0.1:{free_port()}",
               RESTATE_BIND_ADDRESS=f"127.0.0.1:{node}",
               RESTATE_ADVERTISED_ADDRESS=f"http://127.0.0.1:{node}",
               RESTATE_DISABLE_TELEMETRY="true")
    server = subprocess.Popen([server_binary, "--no-logo"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    wait_for("the server", lambda: healthy(admin))
    script = os.path.join(work, "script.jsonl")
    with open(script, "w") as f:
        f.write(json.dumps({"text": "done"}) + "\n")
    log_path = os.path.join(work, "worker.log")
    worker = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{free_port()}", "--sandbox", "off",
         "--script", script, "--cwd", work, "--restate-admin", f"http://127.0.0.1:{admin}"],
        stdout=open(log_path, "w"), stderr=subprocess.STDOUT,
        env=dict(os.environ, GOLATO_CONFIG="/nonexistent"))
    wait_for("the worker", lambda: "registered" in open(log_path).read())
    base = f"http://127.0.0.1:{ingress}"
    keys = []
    for n in range(questions):
        key = f"bench%2F1%2Fc{n}"
        keys.append(key)
        post(f"{base}/GolatoQuestion/{key}/run/send", {
            "run_id": "bench", "turn": 1, "call_id": f"c{n}", "tool": "bash",
            "arguments": {"command": "true"}, "detail": "true", "preview": None,
            "why": "bench", "answer_within_s": 86400})
    wait_for("every question listed",
             lambda: len(json.loads(post(f"{base}/GolatoQuestions/bench/list"))) == questions)
    answers, verdicts = [], []
    for key in keys:
        started = time.monotonic()
        post(f"{base}/GolatoQuestion/{key}/answer", {"answer": "yes"})
        answered = time.monotonic()
        with urllib.request.urlopen(f"{base}/restate/workflow/GolatoQuestion/{key}/attach",
                                    timeout=60) as response:
            verdict = json.loads(response.read())
        assert verdict["verdict"] == "answered", verdict
        answers.append(answered - started)
        verdicts.append(time.monotonic() - started)
    worker.terminate(); worker.wait()
    server.terminate(); server.wait()
    return answers, verdicts


for number in range(1, sittings + 1):
    for binary in binaries:
        answers, verdicts = sitting(binary)
        ms = lambda seconds: f"{seconds * 1000:.1f}"
        print(f"sitting {number} {binary}: answer p50 {ms(percentile(answers, 0.5))} ms "
              f"p99 {ms(percentile(answers, 0.99))} ms; answer to verdict p50 "
              f"{ms(percentile(verdicts, 0.5))} ms p99 {ms(percentile(verdicts, 0.99))} ms",
              flush=True)
