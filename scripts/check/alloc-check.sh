#!/usr/bin/env bash
# Counts heap allocations per loop pass: runs loop-bench's pass-cost workload (id P) under valgrind twice, with N and
# 2N passes, and divides the difference in valgrind's "total heap usage" allocation count by the extra passes.
# Set-up, warm-up and tear-down are the same in both runs, so they cancel out; what is left is the steady state.
# pass-cost runs with --in-process: valgrind counts this process only, and loop-bench would otherwise run it in a
# child.
#
# Then the same again with every measured loop's flight recorder on (LOOP_BENCH_FLIGHT_RECORDER=1): a recorded pass
# must not allocate either.
#
# Usage: scripts/check/alloc-check.sh [path/to/loop-bench]   (default: builds it in release mode first)
# Environment: ALLOC_CHECK_PASSES (N, default 5000). Exits 1 when a pass allocates (more than 1 per 100 passes).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
binary="${1:-}"
if [[ -z "$binary" ]]; then
    swift build -c release --product loop-bench >&2
    binary=.build/release/loop-bench
fi
command -v valgrind >/dev/null || { echo "alloc-check: valgrind is not installed" >&2; exit 2; }

passes="${ALLOC_CHECK_PASSES:-5000}"

# allocations PASSES: the allocation count of one pass-cost run with PASSES passes (each of its measurements).
allocations() {
    local output
    output=$(LOOP_BENCH_PASSES="$1" valgrind --tool=memcheck --leak-check=no "$binary" pass-cost --runs 1 --in-process 2>&1) || {
        echo "$output" >&2
        echo "alloc-check: loop-bench pass-cost failed under valgrind" >&2
        exit 1
    }
    local count
    count=$(grep -m1 'total heap usage' <<<"$output" | sed -E 's/.*usage: ([0-9,]+) allocs.*/\1/' | tr -d ,)
    if [[ ! "$count" =~ ^[0-9]+$ ]]; then
        echo "alloc-check: no 'total heap usage' line in valgrind's output" >&2
        exit 1
    fi
    echo "$count"
}

# check LABEL: measures and judges the steady-state pass, as the environment has it set up.
check() {
    local label=$1 small large extra_passes extra_allocations
    small=$(allocations "$passes")
    large=$(allocations $((passes * 2)))
    # pass-cost measures three times (plain, crowded, monitored by a StallMonitor): the larger run has 3 × passes
    # extra.
    extra_passes=$((passes * 3))
    extra_allocations=$((large - small))
    echo "alloc-check${label}: ${small} allocations with ${passes} passes per measurement, ${large} with" \
        "$((passes * 2)); ${extra_allocations} allocations in ${extra_passes} extra passes"
    awk -v a="$extra_allocations" -v p="$extra_passes" -v l="$label" \
        'BEGIN { printf "alloc-check%s: %.4f heap allocations per pass\n", l, a / p }'
    if (( extra_allocations * 100 > extra_passes )); then
        echo "alloc-check${label}: FAILED: the steady-state pass allocates" >&2
        exit 1
    fi
}

check ""
LOOP_BENCH_FLIGHT_RECORDER=1 check " (flight recorder on)"
