#!/usr/bin/env bash
# Counts the instructions a loop-bench workload executes, with valgrind's callgrind: exact and repeatable for the
# same binary and inputs, whatever else the machine is doing, so it is the measure of a change to a hot path on a
# shared VM (wall-clock figures come from scripts/bench/compare-peers.sh).
#
# Usage: scripts/bench/instructions.sh [path/to/loop-bench] WORKLOAD...
#   e.g. scripts/bench/instructions.sh ping-pong timer-churn timer-churn-callback pass-cost
#        (ids work too: W1 W4 W4c P)
#   Each workload runs once, --quick, in-process; prints "WORKLOAD instructions", the workload as given.
#   Workloads between threads (ping-pong, fan-in, wake-latency: W1, W2, W5) depend on how often a loop sleeps, which
#   valgrind's scheduling decides and a rebuild can change (W1 moved 17% between two builds of the same pass code):
#   compare them per pass, or use pass-cost.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
binary=.build/release/loop-bench
if [[ "${1:-}" == */* ]]; then
    binary=$1
    shift
else
    swift build -c release --product loop-bench >&2
fi
command -v valgrind >/dev/null || { echo "instructions: valgrind is not installed" >&2; exit 2; }
for workload in "$@"; do
    output=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$binary" "$workload" --quick --runs 1 \
        --in-process 2>&1) || { echo "$output" >&2; exit 1; }
    collected=$(grep -m1 -E 'Collected : [0-9]+' <<<"$output" | sed -E 's/.*Collected : ([0-9]+).*/\1/')
    echo "$workload $collected"
done
