#!/usr/bin/env bash
# W2 (two producer threads post 1,000,000 items to one loop thread) side by side: the C floor (a mutex mailbox and an
# eventfd), libuv (uv_async_send and a mutex mailbox), the floor with a 40-byte context malloc'd per item by the
# producer and freed by the consumer (W2a: what a closure's context costs, without the closure), and RunLoopKit's
# closures, perform(with:_:) and LoopPort<Int>; optionally with an earlier build's closures and perform(with:_:) too. Each round runs every form once in a fresh
# process, in the same order; the table gives each form's median, minimum, maximum and spread ((max - min) / median)
# over the rounds, and the medians' ratios to the floor and to libuv.
#
# Usage: scripts/bench/fan-in-side-by-side.sh [--runs N] [--before PATH/TO/loop-bench]
#   --runs N     rounds (default 9)
#   --before P   an earlier build of loop-bench, for before/after in the same run
# Figures depend on the machine's load: the header records the load average before the run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
source scripts/check/lib/apt.sh             # apt_install

runs=9
before=""
while [[ $# -gt 0 ]]; do
    case "$1" in
    --runs) runs=$2; shift ;;
    --before) before=$2; shift ;;
    *) echo "fan-in-side-by-side: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "fan-in-side-by-side: --runs needs a positive number" >&2; exit 2; }

swift build -c release --product loop-bench >&2
pkg-config --exists libuv 2>/dev/null || apt_install libuv1-dev pkg-config
mkdir -p scripts/bench/peers/.build-c
for peer in limit libuv; do
    extra=()
    # shellcheck disable=SC2207
    [[ $peer == libuv ]] && extra=($(pkg-config --cflags --libs libuv 2>/dev/null || echo -luv))
    gcc -O2 -Wall -Wextra -Wno-unused-parameter -pthread -o "scripts/bench/peers/.build-c/$peer" \
        scripts/bench/peers/c-common/workloads.c "scripts/bench/peers/$peer/$peer.c" "${extra[@]}"
done

names=("C floor" "libuv" "C floor, a context allocated per item" "closures" "perform(with:_:)" "LoopPort<Int>")
commands=(
    "scripts/bench/peers/.build-c/limit W2"
    "scripts/bench/peers/.build-c/libuv W2"
    "scripts/bench/peers/.build-c/limit W2a"
    ".build/release/loop-bench fan-in --runs 1"
    ".build/release/loop-bench fan-in-c-function --runs 1"
    ".build/release/loop-bench fan-in-port --runs 1"
)
if [[ -n "$before" ]]; then
    names+=("closures, before" "perform(with:_:), before")
    commands+=("$before fan-in --runs 1" "$before fan-in-c-function --runs 1")
fi

load=$(cut -d' ' -f1-3 /proc/loadavg)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for ((round = 1; round <= runs; round++)); do
    for index in "${!commands[@]}"; do
        echo "fan-in-side-by-side: round $round/$runs: ${names[$index]}" >&2
        # shellcheck disable=SC2086
        value=$(timeout 300 ${commands[$index]} 2>/dev/null | awk '$2 == "throughput_ops_s" { print $3; exit }')
        [[ -n "$value" ]] || { echo "fan-in-side-by-side: ${names[$index]} failed in round $round" >&2; exit 1; }
        echo "$value" >>"$work/$index"
    done
done

# stats FILE -> "median min max"
stats() {
    sort -g "$1" | awk '{ v[NR] = $1 } END {
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        print m, v[1], v[NR] }'
}
read -r floor _ _ < <(stats "$work/0")
read -r uv _ _ < <(stats "$work/1")
echo "- $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD), $(nproc) CPUs, load average before: $load."
echo "- $runs rounds; each round runs every form once, in a fresh process, in the order below."
echo
echo "| form | median M items/s | min | max | spread | ÷ C floor | ÷ libuv |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for index in "${!commands[@]}"; do
    read -r median low high < <(stats "$work/$index")
    awk -v n="${names[$index]}" -v m="$median" -v lo="$low" -v hi="$high" -v f="$floor" -v u="$uv" 'BEGIN {
        printf "| %s | %.1f | %.1f | %.1f | %.0f %% | %.2f | %.2f |\n", n, m / 1e6, lo / 1e6, hi / 1e6,
            (hi - lo) / m * 100, m / f, m / u }'
done
