#!/bin/bash
# Usage: benches/network_presets.sh [GOLATO] [DIR] (needs the internet).
# Each tool fetches through golato's proxy with only its preset allowed; the network log says
# which hosts it contacted and whether any was refused.
set -u
G=${1:-/work/main/target/release/golato}
mkdir -p "${2:-/tmp/golato-presets}" && cd "${2:-/tmp/golato-presets}"
run() { # name preset command
  local name=$1 preset=$2 command=$3
  rm -rf "ws-$name" && mkdir "ws-$name"
  printf '%s\n' "$(python3 -c 'import json,sys; print(json.dumps({"tool_calls":[{"id":"c1","name":"bash","arguments":{"command":sys.argv[1]}}]}))' "$command")" '{"text":"done"}' > "ws-$name/s.jsonl"
  (cd "ws-$name" && GOLATO_CONFIG=/nonexistent timeout 300 "$G" run -q --ephemeral --approve never --allow-domain "$preset" --network-log log.jsonl --script s.jsonl go > out.txt 2>&1)
  echo "== $name ($preset): $(tail -c 300 ws-$name/out.txt | tr '\n' ' ' | cut -c1-200)"
  python3 - "ws-$name/log.jsonl" <<'PY'
import json, sys, collections
hosts = collections.Counter()
for line in open(sys.argv[1]):
    c = json.loads(line)
    hosts[(c["host"], c["allowed"], c.get("reason", ""))] += 1
for (host, allowed, reason), n in sorted(hosts.items()):
    print(f"   {host:40} {'allowed' if allowed else 'BLOCKED ' + reason} x{n}")
PY
}
run crates @crates 'cargo init -q --name probe . && cargo add -q itoa@1.0.11 --offline 2>/dev/null || printf "[dependencies]\nitoa = \"=1.0.11\"\n" >> Cargo.toml; export CARGO_HOME=$PWD/.cargo-home; cargo fetch 2>&1 | tail -3; ls $CARGO_HOME/registry/cache/*/ | head'
run npm @npm 'export npm_config_cache=$PWD/.npm; npm init -y >/dev/null && npm install --no-audit --no-fund is-number 2>&1 | tail -3; ls node_modules'
run pypi @pypi 'export PIP_CACHE_DIR=$PWD/.pip; pip download --no-deps -q -d dl six 2>&1 | tail -3; ls dl'
run github @github 'git clone -q --depth 1 https://github.com/octocat/Hello-World hw 2>&1 | tail -3; ls hw; curl -sSL -o tar.gz https://github.com/octocat/Hello-World/archive/refs/heads/master.tar.gz && ls -la tar.gz'
