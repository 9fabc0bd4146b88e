#!/usr/bin/env bash
# Side by side, signal -> handler latency on an idle thread: RunLoopKit alone (loop-bench signal-latency, G1),
# RunLoopKit attached to a GLib main loop (signal-latency-in-glib, G2), and GLib's own cross-thread call,
# g_main_context_invoke (glib-invoke-latency, G3). The three alternate, round after round, each run in a fresh
# process; the table gives, per workload, the median over the rounds of each run's p50 and p99 (20,000 samples a
# run), end to end and from the return of the target's wait (epoll_wait or GLib's poll) to the handler, and the
# ratios the GLib bridge is held to: G2/G1 (target <= 1.3) and G2/G3 (<= 1).
#
#   scripts/bench/glib-latency.sh [ROUNDS] [--quick] [--pin CPU]
#
# ROUNDS defaults to 5; --quick: 2,000 samples a run; --pin CPU: every run on that one CPU (taskset), sender and
# target sharing it, which leaves out the cross-CPU wake-up (on a VM its cost varies with the idle state of the
# target's CPU from run to run, and can hide the difference between the three).
#
# Needs GLib's runtime library (libglib-2.0.so.0). Progress goes to stderr.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
rounds=5
quick=()
pin=()
label=""
while (($#)); do
    case "$1" in
        --quick) quick=(--quick) ;;
        --pin)
            [[ "${2:-}" =~ ^[0-9]+$ ]] || { echo "glib-latency.sh: --pin needs a CPU number" >&2; exit 2; }
            pin=(taskset -c "$2")
            label="@cpu$2"
            shift
            ;;
        -h | --help)
            sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *[!0-9]* | "")
            echo "usage: scripts/bench/glib-latency.sh [ROUNDS] [--quick] [--pin CPU]" >&2
            exit 2
            ;;
        *) rounds=$1 ;;
    esac
    shift
done

scratch="${BENCH_SCRATCH_PATH:-.build-bench}"
swift build -c release --scratch-path "$scratch" --product loop-bench >&2
binary="$scratch/release/loop-bench"
results=$(mktemp)
trap 'rm -f "$results"' EXIT

workloads=(signal-latency signal-latency-in-glib glib-invoke-latency)
for round in $(seq 1 "$rounds"); do
    for workload in "${workloads[@]}"; do
        echo "glib-latency: round $round/$rounds, $workload" >&2
        "${pin[@]}" "$binary" "$workload" --runs 1 "${quick[@]}" 2>/dev/null \
            | grep -E "^$workload$label (p50_us|p99_us|in_p50_us|in_p99_us|cpu_pct|behind) " | sed "s/^$workload$label /$workload /" >>"$results"
    done
done

# median WORKLOAD KEY : the median of that metric over the rounds.
median() {
    grep "^$1 $2 " "$results" | awk '{ print $3 }' | sort -g \
        | awk '{ value[NR] = $1 } END { if (NR % 2) print value[(NR + 1) / 2]; else print (value[NR / 2] + value[NR / 2 + 1]) / 2 }'
}

echo "# signal -> handler latency, medians of $rounds alternating rounds, each a fresh process${label:+, pinned to ${label#@}}"
echo "# machine: $(uname -srm), $(nproc) CPUs; load average before the last round: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
printf '%-48s %9s %9s %10s %10s %7s %7s\n' "workload" "p50 µs" "p99 µs" "in p50 µs" "in p99 µs" "cpu %" \
    "behind"
for workload in "${workloads[@]}"; do
    case "$workload" in
        signal-latency) name="signal-latency (G1), RunLoopKit alone" ;;
        signal-latency-in-glib) name="signal-latency-in-glib (G2), in g_main_loop_run" ;;
        glib-invoke-latency) name="glib-invoke-latency (G3), g_main_context_invoke" ;;
    esac
    printf '%-48s %9s %9s %10s %10s %7s %7s\n' "$name" "$(median "$workload" p50_us)" "$(median "$workload" p99_us)" \
        "$(median "$workload" in_p50_us)" "$(median "$workload" in_p99_us)" "$(median "$workload" cpu_pct)" \
        "$(median "$workload" behind)"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
g1=signal-latency g2=signal-latency-in-glib g3=glib-invoke-latency
echo "G2/G1: p50 $(ratio "$(median $g2 p50_us)" "$(median $g1 p50_us)"), p99 $(ratio "$(median $g2 p99_us)" "$(median $g1 p99_us)")"
echo "G2/G3: p50 $(ratio "$(median $g2 p50_us)" "$(median $g3 p50_us)"), p99 $(ratio "$(median $g2 p99_us)" "$(median $g3 p99_us)")"
echo "in the target, G2 - G1: p50 $(awk -v a="$(median $g2 in_p50_us)" -v b="$(median $g1 in_p50_us)" 'BEGIN { printf "%+.2f", a - b }') µs"
