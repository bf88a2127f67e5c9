#!/usr/bin/env python3
"""What checkpoints cost a call: N calls (each its own turn) that change a small file in a
workspace of 10,000 files, replayed by `golato run --script`, each R times; prints the medians
and the difference per call.

- `edit` (the default): N edits, with the session saved (checkpoints kept) and with
  --ephemeral (none);
- `bash`: N sandboxed commands (`sed -i`), captured (the default) and with
  --no-bash-checkpoints (the session saved both times): what the overlay and applying it cost.

    python3 benches/checkpoint_cost.py target/release/golato [N] [R] [edit|bash]
"""
import json, os, statistics, subprocess, sys, tempfile, time

golato = os.path.abspath(sys.argv[1])
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 200
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
mode = sys.argv[4] if len(sys.argv) > 4 else "edit"

def timed(flags, data):
    with tempfile.TemporaryDirectory() as work:
        ws = os.path.join(work, "ws")
        for d in range(100):
            os.makedirs(os.path.join(ws, f"d{d}"))
            for f in range(100):
                with open(os.path.join(ws, f"d{d}", f"f{f}.txt"), "w") as out:
                    out.write(f"file {d} {f}\n" * 20)
        with open(os.path.join(ws, "target.txt"), "w") as out:
            out.write("value 0\n")
        # The 10,000 files just made are still being written back: a run's fsyncs would wait
        # behind them (the first run of each sitting took up to 0.8 s longer).
        os.sync()
        script = os.path.join(work, "script.jsonl")
        with open(script, "w") as out:
            for n in range(calls):
                if mode == "bash":
                    call = {"id": f"b{n}", "name": "bash",
                            "arguments": {"command": f"sed -i 's/value {n}$/value {n + 1}/' target.txt"}}
                else:
                    edit = {"path": "target.txt", "edits": [{"oldText": f"value {n}", "newText": f"value {n + 1}"}]}
                    call = {"id": f"e{n}", "name": "edit", "arguments": edit}
                out.write(json.dumps({"tool_calls": [call]}) + "\n")
            out.write(json.dumps({"text": "done"}) + "\n")
        env = dict(os.environ, GOLATO_DATA_DIR=data)
        started = time.perf_counter()
        subprocess.run([golato, "run", "-q", "--script", script, "-C", ws] + flags + ["go"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        elapsed = time.perf_counter() - started
        with open(os.path.join(ws, "target.txt")) as done:
            assert done.read() == f"value {calls}\n", "the calls did not all change the file"
        if mode == "bash" and "--no-bash-checkpoints" not in flags:
            # Every command was captured: one that fell back to running uncaptured (the
            # kernel refused the overlay) would make capture look cheaper than it is.
            sessions = os.path.join(data, "sessions")
            newest = max((os.path.join(sessions, name) for name in os.listdir(sessions)
                          if name.endswith(".jsonl")), key=os.path.getmtime)
            with open(newest) as session:
                captured = session.read().count('"capture":"captured"')
            assert captured == calls, f"{captured} of {calls} commands were captured"
        return elapsed

baseline, label = {
    "edit": (["--ephemeral"], ("saved with checkpoints", "ephemeral", "checkpoints and session lines")),
    "bash": (["--no-bash-checkpoints"], ("captured", "uncaptured", "capture")),
}[mode]
with tempfile.TemporaryDirectory() as data:
    measured, base = [], []
    for _ in range(rounds):
        measured.append(timed([], data))
        base.append(timed(baseline, data))
    a, b = statistics.median(measured), statistics.median(base)
    print(f"{calls} {mode} calls in a 10,000-file workspace: {label[0]} {a:.3f} s "
          f"(spread {min(measured):.3f}-{max(measured):.3f}), {label[1]} {b:.3f} s "
          f"(spread {min(base):.3f}-{max(base):.3f}); "
          f"{label[2]} {(a - b) / calls * 1000:.2f} ms a call")
