#!/usr/bin/env bash
# Builds loop-bench in release mode and runs every workload of Docs/Benchmarks.md (W1–W5, ours, and the scaling
# tables S1–S3), each run in a fresh process, then ping-pong (W1) again pinned to one CPU (ping-pong@cpu0, the shared
# benchmarks.md's W1@cpu0; the children inherit it). Usage: scripts/bench/bench.sh [output-file] [loop-bench options,
# e.g. --runs 5 or --quick]
# Without an output file (or with "-") the results go to stdout. Progress goes to stderr.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
output="${1:--}"
shift || true
scratch="${BENCH_SCRATCH_PATH:-.build-bench}"

swift build -c release --scratch-path "$scratch" --product loop-bench >&2
binary="$scratch/release/loop-bench"

run() {
    echo "# machine: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
        "$(git diff --quiet HEAD -- Sources 2>/dev/null || echo '(with uncommitted changes)')"
    echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    "$binary" all "$@"
    echo
    # W1@cpu0: both loop threads share CPU 0; the program is unchanged and labels itself from its affinity.
    taskset -c 0 "$binary" ping-pong "$@"
}

if [[ "$output" == "-" ]]; then
    run "$@"
else
    run "$@" >"$output"
    echo "results written to $output" >&2
fi
