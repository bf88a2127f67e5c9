#!/usr/bin/env bash
# Checks stats.sh: prints one line per check, exits 1 when any check fails.
source "$(dirname "$0")/stats.sh"

failed=0
expect() {
    local want=$1
    shift
    local got
    got=$(mean "$@")
    if [[ "$got" == "$want" ]]; then
        echo "ok    mean $* = $got"
    else
        echo "FAIL  mean $* = $got, expected $want"
        failed=1
    fi
}

expect 4 2 4 6
expect 5 5
expect 10 7 13
if [[ $failed == 0 ]]; then
    echo "all checks passed"
else
    echo "some checks failed"
    exit 1
fi
