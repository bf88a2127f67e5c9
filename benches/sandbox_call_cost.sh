#!/usr/bin/env bash
# Per-call cost of the sandbox helper: N runs of `HELPER __golato-sandbox SPEC -- bash -c true`
# and of `HELPER __golato-guard PID -- bash -c true` against N runs of `bash -c true`, in a fresh workspace, as whoever runs it. BENCHMARKS.md,
# "sandbox", says how it was run (as root, and as nobody through setpriv):
#   cargo build --release --bin golato-sandbox
#   benches/sandbox_call_cost.sh target/release/golato-sandbox 200
set -euo pipefail
helper=$1; n=${2:-200}
ws=$(mktemp -d); cd "$ws"
spec=$(printf '{"writable":["/tmp","%s"],"denied":["%s/.ssh","%s/.aws","%s/.netrc"],"protected":["%s/.golato","%s/.git/hooks","%s/AGENTS.md"],"network":false,"private_shm":true,"private_tmp":null,"pass_env":[],"cwd":"%s"}' "$ws" "$HOME" "$HOME" "$HOME" "$ws" "$ws" "$ws" "$ws")
"$helper" __golato-sandbox "$spec" -- bash -c 'echo probe-ok' < /dev/null
t0=$(date +%s%N); for _ in $(seq "$n"); do bash -c true < /dev/null; done; t1=$(date +%s%N)
for _ in $(seq "$n"); do "$helper" __golato-sandbox "$spec" -- bash -c true < /dev/null; done; t2=$(date +%s%N)
# The guard alone (the sandbox off, as the command line runs it): its parent is this shell.
for _ in $(seq "$n"); do "$helper" __golato-guard $$ -- bash -c true < /dev/null; done; t3=$(date +%s%N)
echo "$(id -un) $(basename "$helper"): bash alone $(( (t1-t0)/n/1000 )) us, sandboxed $(( (t2-t1)/n/1000 )) us, extra $(( ((t2-t1)-(t1-t0))/n/1000 )) us per call; guarded (sandbox off) $(( (t3-t2)/n/1000 )) us, extra $(( ((t3-t2)-(t1-t0))/n/1000 )) us"
rm -rf "$ws"
