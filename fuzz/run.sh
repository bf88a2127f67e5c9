#!/usr/bin/env bash
# Runs every fuzz target (or those in $TARGETS) for SECONDS each (default 600), one after another, with seed corpora
# from ../tests/fixtures/llm (the recorded provider streams the tests replay).
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Logs and corpora go
# to $FUZZ_WORK (default /tmp/golato-fuzz); a crash leaves its input under fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-600}
work=${FUZZ_WORK:-/tmp/golato-fuzz}
fixtures=../tests/fixtures/llm
mkdir -p "$work"
seed() { # target, fixture directory
    mkdir -p "$work/corpus/$1"
    if [ -d "$fixtures/$2" ]; then
        for f in "$fixtures/$2"/*; do
            # The first byte is where the target cuts the stream in two.
            { printf '\x40'; cat "$f"; } > "$work/corpus/$1/$(basename "$f")"
        done
    fi
}
seed_lines() { # target, fixture directory of JSON lines (one event each), framed as SSE
    mkdir -p "$work/corpus/$1"
    if [ -d "$fixtures/$2" ]; then
        for f in "$fixtures/$2"/*; do
            { printf '\x40'; sed -e 's/^/data: /' -e 's/$/\n/' "$f"; } > "$work/corpus/$1/$(basename "$f")"
        done
    fi
}
seed sse_openai openai-chat
seed sse_anthropic anthropic
seed_lines sse_responses openai-responses
# The first byte is the limit, the second where the body is cut.
mkdir -p "$work/corpus/sse_limit"
for f in "$fixtures/openai-chat"/*; do
    { printf '\x40\x40'; head -c 2000 "$f"; } > "$work/corpus/sse_limit/$(basename "$f")"
done
mkdir -p "$work/corpus/edit_matcher" "$work/corpus/validation" "$work/corpus/image"
printf 'fn main() {\n    let x = \xe2\x80\x9chi\xe2\x80\x9d;  \n}\n\xffx = "hi"\xffy' > "$work/corpus/edit_matcher/seed"
printf '{"path": "a", "count": 3, "items": [{"x": 1.5}]}' > "$work/corpus/validation/seed"
# golato's own files: a session (the demo's, and one cut off while its calls ran) and a
# configuration setting every key, with profiles.
for target in session_file config_file; do
    mkdir -p "$work/corpus/$target"
    cp seeds/$target/* "$work/corpus/$target/"
done
cargo +nightly fuzz build -O
for target in ${TARGETS:-sse_openai sse_anthropic sse_responses sse_limit edit_matcher validation image session_file config_file}; do
    echo "== $target ($seconds s)"
    cargo +nightly fuzz run -O "$target" "$work/corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
        > "$work/$target.log" 2>&1 || echo "$target stopped with a finding: see $work/$target.log"
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY|panicked" "$work/$target.log" || true
done
