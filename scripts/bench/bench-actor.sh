#!/usr/bin/env bash
# loop-bench's actor-hop (A) and task-executor-hop (T, with a 16-task actor fan-in) against SwiftNIO: builds it and the
# peer scripts/bench/peers/nio-actor-bench in release mode, then runs fresh processes alternating ours and NIO's (RUNS
# each, default 3), and prints the median of each figure (ns per round trip, or calls per second) and the ratios.
#
# Usage: scripts/bench/bench-actor.sh [--quick]      Environment: RUNS (default 3), TASKSET (e.g. "taskset -c 0").
# Figures vary a lot on a busy machine: each round trip wakes two threads; run it on a quiet one.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
quick=()
[[ "${1:-}" == "--quick" ]] && quick=(--quick)
runs="${RUNS:-3}"
read -r -a pin <<<"${TASKSET:-}"

swift build -c release --product loop-bench >&2
(cd scripts/bench/peers/nio-actor-bench && swift build -c release >&2)
ours=.build/release/loop-bench
theirs=scripts/bench/peers/nio-actor-bench/.build/release/nio-actor-bench

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for ((run = 1; run <= runs; run++)); do
    echo "bench-actor: run $run/$runs: RunLoopKit" >&2
    "${pin[@]}" "$ours" actor-hop task-executor-hop --runs 1 "${quick[@]}" 2>/dev/null \
        | grep -E '^(actor-hop|task-executor-hop)(@cpu[0-9]+)? [a-z0-9_]+ ' \
        | sed -E 's/^actor-hop(@cpu[0-9]+)? //; s/^task-executor-hop(@cpu[0-9]+)? /T_/' >>"$results"
    echo "bench-actor: run $run/$runs: NIO" >&2
    "${pin[@]}" "$theirs" "${quick[@]}" | sed -E 's/^A-nio //' >>"$results"
done

median() {
    grep -E "^$1 " "$results" | awk '{ print $2 }' | sort -n | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "nan"; exit }
        print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

printf '%-24s %12s\n' "figure (median of $runs)" "ns/rt"
for key in loop_actor_ns perform_ns default_actor_ns loop_to_loop_ns w1_perform_ns \
    T_preferred_ns T_thread_run_ns T_loop_actor_ns T_global_ns \
    nio_actor_ns nio_execute_ns nio_loop_to_loop_ns nio_submit_ns; do
    printf '%-24s %12s\n' "${key%_ns}" "$(median "$key")"
done
echo
printf '%-24s %12s\n' "16-task fan-in" "calls/s"
for key in T_fanin_loop_actor_calls_s T_fanin_default_actor_calls_s nio_fanin_calls_s; do
    printf '%-24s %12s\n' "${key%_calls_s}" "$(median "$key")"
done
ratio() { awk -v a="$(median "$1")" -v b="$(median "$2")" 'BEGIN { printf "%.2f", a / b }'; }
echo
echo "loop_actor / perform          $(ratio loop_actor_ns perform_ns)   (target <= 1.2)"
echo "loop_to_loop / w1_perform     $(ratio loop_to_loop_ns w1_perform_ns)   (target <= 1.2)"
echo "loop_actor / nio_actor        $(ratio loop_actor_ns nio_actor_ns)"
echo "loop_to_loop / nio_loop_to_loop $(ratio loop_to_loop_ns nio_loop_to_loop_ns)"
echo "nio_actor / nio_execute       $(ratio nio_actor_ns nio_execute_ns)"
echo "T preferred / T thread_run    $(ratio T_preferred_ns T_thread_run_ns)   (target <= 1.2)"
echo "T thread_run / nio_submit     $(ratio T_thread_run_ns nio_submit_ns)"
echo "T fan-in loop actor / NIO     $(ratio T_fanin_loop_actor_calls_s nio_fanin_calls_s)   (calls/s: above 1 is faster)"
