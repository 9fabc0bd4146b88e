#!/usr/bin/env bash
# Instructions per item on each side of W2 (two producer threads post to one loop thread), counted by valgrind's
# callgrind per thread: exact for a given binary, so a busy machine cannot move it (wall-clock W2 swings by 2x here).
# Forms: closures (`Loop.perform { }`, W2), allocation-free calls (`perform(with:_:)`, W2f), a `LoopPort<Int>` (W2p),
# and the C floor's mutex mailbox (scripts/bench/peers/limit, W2), also with a context malloc'd per item by the producer
# and freed by the consumer (W2a: a closure's allocation without the closure).
#
# Usage: scripts/bench/fan-in-instructions.sh [--loop-bench PATH]
#   Each form runs once, --quick (100,000 items: 50,000 per producer). Prints, per form, the instructions of the two
#   producer threads per item (everything a producer does for an item: making the closure, posting, waking) and of
#   the consumer thread per item (taking, running the item's code, freeing, and its share of the passes and sleeps).
#   Threads are told apart by what they call: the consumer is the one in epoll_wait; the producers are the two
#   busiest of the others, the process's main thread (which only starts and waits) excluded.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
source scripts/check/lib/apt.sh             # apt_install

bench=.build/release/loop-bench
if [[ "${1:-}" == --loop-bench ]]; then
    bench=$2
    shift 2
else
    swift build -c release --product loop-bench >&2
fi
command -v valgrind >/dev/null 2>&1 || apt_install valgrind
command -v valgrind >/dev/null 2>&1 || { echo "fan-in-instructions: valgrind is not installed" >&2; exit 2; }
mkdir -p scripts/bench/peers/.build-c
floor=scripts/bench/peers/.build-c/limit
gcc -O2 -Wall -Wextra -Wno-unused-parameter -pthread -g -o "$floor" scripts/bench/peers/c-common/workloads.c \
    scripts/bench/peers/limit/limit.c

items=100000
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# measure NAME COMMAND... : one row of the table.
measure() {
    local name=$1
    shift
    rm -f "$work"/cg.out*
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$work/cg.out" "$@" >"$work/stdout" \
        2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
    local consumer=0 consumers=0 others=()
    for file in "$work"/cg.out-*; do
        [[ "$file" == *-01 ]] && continue  # The main thread.
        local total
        total=$(grep -m1 -E '^(summary|totals):' "$file" | awk '{ print $2 }')
        if grep -q 'epoll_wait' "$file" && ((total > consumer)); then
            ((consumer > 0)) && others+=("$consumer")
            consumer=$total
            consumers=$((consumers + 1))
        else
            others+=("$total")
        fi
    done
    local producers
    producers=$(printf '%s\n' "${others[@]}" | sort -gr | head -n 2 | awk '{ sum += $1 } END { print sum + 0 }')
    awk -v n="$name" -v p="$producers" -v c="$consumer" -v items="$items" \
        'BEGIN { printf "| %s | %.1f | %.1f | %.1f |\n", n, p / items, c / items, (p + c) / items }'
}

echo "| form | producer instructions per item | consumer instructions per item | both |"
echo "|---|---:|---:|---:|"
measure "C floor (mutex mailbox, eventfd)" "$floor" W2 --quick
measure "C floor, a 40-byte context allocated per item (W2a)" "$floor" W2a --quick
measure '`loop.perform { … }` (closures)' "$bench" fan-in --quick --runs 1 --in-process
measure '`loop.perform(with:_:)`' "$bench" fan-in-c-function --quick --runs 1 --in-process
measure '`LoopPort<Int>.send(_:)`' "$bench" fan-in-port --quick --runs 1 --in-process
