#!/usr/bin/env bash
# Heap allocations per RunLoopKit operation: builds the separate package scripts/bench/alloc-bench (ordo-one's
# package-benchmark with its malloc interposer, so RunLoopKit itself keeps no dependencies) and runs it, then prints
# mallocs per operation: the median (p50) and the largest (p100) per-iteration count ÷ the operations per iteration.
# Counts are process-wide: a cross-thread benchmark includes the other loop's wake-up and pass.
#
# Usage: scripts/bench/alloc-bench.sh [--raw]   (--raw: also print package-benchmark's own table)
# Not run by CI: a first build of package-benchmark and its dependencies takes a few minutes on 2 CPUs.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
cd scripts/bench/alloc-bench
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
operations=$(sed -nE 's/^let operations = ([0-9_]+).*/\1/p' Benchmarks/Allocations/Allocations.swift | tr -d _)

output=$(swift package --disable-sandbox benchmark --no-progress --metric mallocCountTotal 2>&1) || {
    echo "$output" >&2
    echo "alloc-bench: the benchmark run failed" >&2
    exit 1
}
[[ "${1:-}" == "--raw" ]] && echo "$output"

echo "# mallocs per operation ($operations operations per iteration; p50 and p100 over the iterations)"
printf '%-46s %10s %10s\n' "benchmark" "p50/op" "max/op"
# The text table: a benchmark's name on a line of its own, then a box whose "Malloc (total)" row holds p0 … p100.
awk -v ops="$operations" -F '│' '
    /^[a-z]/ { name = $0 }
    /Malloc \(total\)/ {
        gsub(/[ ,]/, "", $5); gsub(/[ ,]/, "", $9)
        printf "%-46s %10.3f %10.3f\n", name, $5 / ops, $9 / ops
    }' <<<"$output"
