#!/usr/bin/env python3
"""What checkpoints cost a call: N edits (each its own turn) of a small file in a workspace of
10,000 files, replayed by `golato run --script`, with the session saved (checkpoints kept) and
with --ephemeral (none), each R times; prints the medians and the difference per call.

    python3 benches/checkpoint_cost.py target/release/golato [N] [R]
"""
import json, os, statistics, subprocess, sys, tempfile, time

golato = os.path.abspath(sys.argv[1])
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 200
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5

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
        script = os.path.join(work, "script.jsonl")
        with open(script, "w") as out:
            for n in range(calls):
                edit = {"path": "target.txt", "edits": [{"oldText": f"value {n}", "newText": f"value {n + 1}"}]}
                out.write(json.dumps({"tool_calls": [{"id": f"e{n}", "name": "edit", "arguments": edit}]}) + "\n")
            out.write(json.dumps({"text": "done"}) + "\n")
        env = dict(os.environ, GOLATO_DATA_DIR=data)
        started = time.perf_counter()
        subprocess.run([golato, "run", "-q", "--script", script, "-C", ws] + flags + ["go"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        return time.perf_counter() - started

with tempfile.TemporaryDirectory() as data:
    saved, ephemeral = [], []
    for _ in range(rounds):
        saved.append(timed([], data))
        ephemeral.append(timed(["--ephemeral"], data))
    a, b = statistics.median(saved), statistics.median(ephemeral)
    print(f"{calls} edits in a 10,000-file workspace: saved with checkpoints {a:.3f} s "
          f"(spread {min(saved):.3f}-{max(saved):.3f}), ephemeral {b:.3f} s "
          f"(spread {min(ephemeral):.3f}-{max(ephemeral):.3f}); "
          f"checkpoints and session lines {(a - b) / calls * 1000:.2f} ms a call")
