#!/usr/bin/env bash
# mean N...: prints the integer mean of its arguments.
mean() {
    local sum=0 count=0
    for n in "$@"; do
        sum=$((sum + n))
        count=$((count + 1))
    done
    echo $((sum / (count + 1)))
}
