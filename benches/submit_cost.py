"""What live events cost a submitter (issue 47 point 6): RUNS durable runs of two turns and four
calls, submitted with `golato submit` 16 at a time, against one worker that publishes its runs'
events (`golato serve --restate URL`: each submitter watches them) and one that does not (the
submitter polls for events, finds none, and waits for the outcome); alternately, SITTINGS times.
Prints, per sitting and mode: runs/s, p50 and p99 of one `golato submit`'s wall time, and the
submitters' CPU per run (user + system of the `golato submit` processes).

GOLATO_RESTATE_SERVER=.../bin/restate-server \
    python3 benches/submit_cost.py target/release/golato [RUNS] [SITTINGS]
"""
import json, os, resource, socket, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor

binary = os.path.abspath(sys.argv[1])
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 160
sittings = int(sys.argv[3]) if len(sys.argv) > 3 else 3
server_binary = os.environ["GOLATO_RESTATE_SERVER"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, seconds=60):
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


def sitting(publish):
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
    calls = [{"id": f"c{n}", "name": "read", "arguments": {"path": "note.txt"}} for n in range(4)]
    with open(os.path.join(work, "note.txt"), "w") as f:
        f.write("a small file\n")
    script = os.path.join(work, "script.jsonl")
    with open(script, "w") as f:
        f.write(json.dumps({"tool_calls": calls[:2]}) + "\n")
        f.write(json.dumps({"tool_calls": calls[2:]}) + "\n")
        f.write(json.dumps({"text": "done"}) + "\n")
    worker_port = free_port()
    flags = ["serve", "--listen", f"127.0.0.1:{worker_port}", "--sandbox", "off",
             "--script", script, "--cwd", work, "--restate-admin", f"http://127.0.0.1:{admin}"]
    if publish:
        flags += ["--restate", f"http://127.0.0.1:{ingress}"]
    log = open(os.path.join(work, "worker.log"), "w")
    worker = subprocess.Popen([binary] + flags, stdout=log, stderr=log,
                              env=dict(os.environ, GOLATO_CONFIG="/nonexistent"))
    wait_for("the worker", lambda: "registered" in open(os.path.join(work, "worker.log")).read())

    def submit(n):
        started = time.monotonic()
        subprocess.run([binary, "submit", "--restate", f"http://127.0.0.1:{ingress}",
                        "--id", f"run-{n}", "--json", "go"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        return time.monotonic() - started

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(submit, range(1000, 1016)))  # warm-up
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        walls = sorted(pool.map(submit, range(runs)))
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    worker.terminate(); worker.wait(); server.kill(); server.wait()
    return {"events": publish, "runs": runs, "runs_per_s": round(runs / wall, 1),
            "submit_p50_s": round(walls[len(walls) // 2], 3),
            "submit_p99_s": round(walls[int(len(walls) * 0.99)], 3),
            "submitter_cpu_ms_per_run": round(cpu / runs * 1000, 1)}


for _ in range(sittings):
    for publish in (False, True):
        print(json.dumps(sitting(publish)), flush=True)
