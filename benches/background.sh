#!/usr/bin/env bash
# Background commands: what they cost (BENCHMARKS.md, "Background commands").
#   cargo build --release -p golato-cli
#   benches/background.sh target/release/golato [N]
# 1. Per sandboxed call: a network namespace of its own (as every call without background
#    commands) against joining the session's shared one (`--join-network`, what every call
#    makes after a background command started), N calls each.
# 2. golato's peak memory while 8 background commands print as fast as they can for 10 s,
#    against 8 that print nothing: the output each holds is a 256 KiB ring, the rest goes to
#    its log file. The bytes golato read in those 10 s are summed from bash_kill's results.
set -euo pipefail
golato=$(realpath "$1"); n=${2:-200}
ws=$(mktemp -d); cd "$ws"
spec=$(printf '{"writable":["/tmp","%s"],"denied":["%s/.ssh"],"protected":["%s/.golato"],"network":false,"private_shm":true,"private_tmp":null,"pass_env":[],"cwd":"%s"}' "$ws" "$HOME" "$ws" "$ws")
"$golato" __golato-sandbox "$spec" -- bash -c 'echo probe-ok' < /dev/null

coproc HOLD { exec "$golato" __golato-sandbox "$spec" --hold-network; }
read -r ready <&"${HOLD[0]}"
[ "$ready" = ready ] || { echo "the holder said: $ready" >&2; exit 1; }
join="$HOLD_PID:$(stat -L -c %i /proc/"$HOLD_PID"/ns/user):$(stat -L -c %i /proc/"$HOLD_PID"/ns/net)"
t0=$(date +%s%N); for _ in $(seq "$n"); do "$golato" __golato-sandbox "$spec" -- bash -c true < /dev/null; done
t1=$(date +%s%N); for _ in $(seq "$n"); do "$golato" __golato-sandbox "$spec" --join-network "$join" -- bash -c true < /dev/null; done
t2=$(date +%s%N)
eval "exec ${HOLD[1]}>&-"
wait "$HOLD_PID" || true
echo "per sandboxed call: own network namespace $(( (t1-t0)/n/1000 )) us, joining the shared one $(( (t2-t1)/n/1000 )) us"

flood() {
  local command=$1 calls="" kills="" i
  for i in 1 2 3 4 5 6 7 8; do
    calls+="{\"id\":\"s$i\",\"name\":\"bash\",\"arguments\":{\"command\":\"$command\",\"background\":true}},"
    kills+="{\"id\":\"k$i\",\"name\":\"bash_kill\",\"arguments\":{\"id\":$i}},"
  done
  {
    echo "{\"tool_calls\":[${calls%,}]}"
    echo '{"tool_calls":[{"id":"w","name":"bash","arguments":{"command":"sleep 10"}}]}'
    echo "{\"tool_calls\":[${kills%,}]}"
    echo '{"text":"done"}'
  } > script.jsonl
  /usr/bin/time -f '%M' -o rss.txt "$golato" run --json --ephemeral --approve never --script script.jsonl go > run.jsonl 2> /dev/null
  local bytes
  bytes=$(python3 -c '
import json, sys
total = 0
for line in open("run.jsonl"):
    event = json.loads(line)
    if event.get("type") == "tool_end" and event["call"]["name"] == "bash_kill":
        total += event["result"]["details"]["background"]["until"]
print(total)')
  echo "8 background commands of \`$command\` for 10 s: golato's peak RSS $(cat rss.txt) KiB, output read $(( bytes / 1048576 )) MiB"
}
flood "sleep 1000"
flood "yes 0123456789abcdef0123456789abcdef"
rm -rf "$ws" /tmp/golato-bash-background-*.log
