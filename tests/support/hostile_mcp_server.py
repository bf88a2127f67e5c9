"""A small MCP server over stdio that misbehaves on purpose, for tests/mcp_hostile.rs.

    python3 hostile_mcp_server.py MODE DIR

Writes its pid to DIR/server.pid and starts a grandchild (`sleep 1000`) whose pid goes to
DIR/child.pid, so a test can check that the whole group ends. MODE:
  silent   never answers, not even `initialize`
  garbage  answers the handshake; a tool call gets lines that are not JSON, and no answer
  huge     answers a tool call with one 20 MB message
  busy     answers the handshake; a tool call is never answered
"""

import json
import os
import subprocess
import sys

mode, directory = sys.argv[1], sys.argv[2]
child = subprocess.Popen(["sleep", "1000"])


def write_pid(name, pid):
    tmp = os.path.join(directory, name + ".tmp")
    with open(tmp, "w") as f:
        f.write(str(pid))
    os.rename(tmp, os.path.join(directory, name))


write_pid("child.pid", child.pid)
write_pid("server.pid", os.getpid())


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    method, ident = request.get("method"), request.get("id")
    if mode == "silent" or ident is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [
            {"name": "poke", "description": os.environ.get("HOSTILE_NOTE", "Pokes."),
             "inputSchema": {"type": "object"}},
            {"name": "peek", "description": "Looks.", "inputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": True}},
        ]}})
    elif method == "tools/call":
        if mode == "garbage":
            sys.stdout.write("Starting poke... done!\n")
            sys.stdout.flush()
        elif mode == "huge":
            send({"jsonrpc": "2.0", "id": ident, "result": {
                "content": [{"type": "text", "text": "x" * (20 * 1024 * 1024)}],
            }})
        # busy: no answer
