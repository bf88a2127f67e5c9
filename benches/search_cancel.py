"""How soon `grep` and `find` stop once their call is cancelled, on a tree of about 1 GB (1024
text files of 1 MiB, no line matching): `golato tool grep` is started, SIGINT is sent after
0.5 s (golato cancels the call, as Ctrl-C does), and the time from the signal to the process's
exit is measured; 5 times each.

python3 benches/search_cancel.py target/release/golato [DIR]
"""
import os, signal, subprocess, sys, tempfile, time

binary = os.path.abspath(sys.argv[1])
root = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(dir="/var/tmp")
line = b"the quick brown fox jumps over the lazy dog 0123456789\n"
block = line * (1024 * 1024 // len(line))
for i in range(1024):
    path = os.path.join(root, "d%02d" % (i % 32), "f%04d.txt" % i)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(block)
for tool, args in [("grep", '{"pattern": "never-there-xyz"}'), ("find", '{"pattern": "*.none"}')]:
    times = []
    for _ in range(5):
        process = subprocess.Popen([binary, "tool", tool, args, "--cwd", root],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        if process.poll() is not None:
            times.append(None)
            continue
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        process.wait()
        times.append((time.monotonic() - sent) * 1000)
    shown = ["done before 0.5 s" if t is None else "%.0f ms" % t for t in times]
    print("%s on %s: signal to exit %s" % (tool, root, ", ".join(shown)))
