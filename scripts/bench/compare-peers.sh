#!/usr/bin/env bash
# Side by side with the peers: W1, W1@cpu0, W2, W3, W4, W5 of the shared benchmarks.md on RunLoopKit's loop-bench and
# on the peer programs under scripts/bench/peers/ (limit, libuv, nio, nio-cb, foundation), each cell the median of N
# fresh processes run in alternation (round r: every peer once, then round r+1). Builds everything first (release).
#
# Usage: scripts/bench/compare-peers.sh [--quick] [--runs N]
#            [--peers "limit libuv nio nio-cb foundation runloopkit runloopkit-lt runloopkit-cb runloopkit-fn runloopkit-re"]
#                                 [--no-write]
#   --quick     smoke run: every size ÷ 10 (W4's live window stays 10,000); the table is printed, Docs are left alone
#   --runs N    processes per cell (default 3)
#   --peers     the columns, in this order
#   --no-write  print the table only (a full-size run otherwise writes it into Docs/Benchmarks.md between the
#               compare-peers markers)
# A cell whose process fails its checks, times out or does not build shows FAILED; the script goes on.
# Figures are only meaningful on a quiet machine: the header records the load average.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
root=$(pwd)
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

quick=()
runs=3
peers="limit libuv nio nio-cb foundation runloopkit runloopkit-lt runloopkit-cb runloopkit-fn runloopkit-re"
write=1
while [[ $# -gt 0 ]]; do
    case "$1" in
    --quick) quick=(--quick) ;;
    --runs)
        runs="${2:-}"
        shift
        [[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "compare-peers: --runs needs a positive number" >&2; exit 2; }
        ;;
    --peers)
        peers="${2:-}"
        shift
        ;;
    --no-write) write=0 ;;
    -h | --help)
        sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "compare-peers: unknown argument '$1' (see --help)" >&2
        exit 2
        ;;
    esac
    shift
done
read -r -a peer_list <<<"$peers"
for peer in "${peer_list[@]}"; do
    case "$peer" in
    limit | libuv | nio | nio-cb | foundation | runloopkit | runloopkit-lt | runloopkit-cb | runloopkit-fn | runloopkit-re) ;;
    *) echo "compare-peers: unknown peer '$peer'" >&2; exit 2 ;;
    esac
done
[[ ${#quick[@]} -gt 0 ]] && write=0
has_peer() { [[ " ${peer_list[*]} " == *" $1 "* ]]; }
log() { echo "compare-peers: $*" >&2; }

started=$(date +%s)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results="$work/results" # lines: "<workload> <peer> <key> <value>" and "<workload> <peer> FAILED"
touch "$results"

# ---- build ----

c_out=scripts/bench/peers/.build-c
declare -A broken=()

ensure_libuv() {
    if pkg-config --exists libuv 2>/dev/null || dpkg -s libuv1-dev >/dev/null 2>&1; then return 0; fi
    log "installing libuv1-dev"
    local sudo=()
    [[ $(id -u) -ne 0 ]] && sudo=(sudo)
    "${sudo[@]}" apt-get install -y -q libuv1-dev >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; return 1; }
}

build_c_peer() { # name, extra gcc arguments...
    local name=$1
    shift
    mkdir -p "$c_out"
    gcc -O2 -Wall -Wextra -Wno-unused-parameter -pthread -o "$c_out/$name" \
        scripts/bench/peers/c-common/workloads.c "scripts/bench/peers/$name/$name.c" "$@"
}

if has_peer limit; then
    log "building limit (gcc -O2)"
    build_c_peer limit || broken[limit]=1
fi
if has_peer libuv; then
    log "building libuv (gcc -O2)"
    if ensure_libuv; then
        # shellcheck disable=SC2046
        build_c_peer libuv $(pkg-config --cflags --libs libuv 2>/dev/null || echo -luv) || broken[libuv]=1
    else
        broken[libuv]=1
    fi
fi
if has_peer nio || has_peer nio-cb; then
    log "building scripts/bench/peers/nio-bench (release)"
    (cd scripts/bench/peers/nio-bench && swift build -c release --scratch-path .build-release >&2) || {
        broken[nio]=1
        broken[nio-cb]=1
    }
fi
if has_peer foundation; then
    log "building scripts/bench/peers/foundation-bench (release)"
    (cd scripts/bench/peers/foundation-bench && swift build -c release --scratch-path .build-release >&2) || broken[foundation]=1
fi
our_columns=(runloopkit runloopkit-lt runloopkit-cb runloopkit-fn runloopkit-re)
if has_peer runloopkit || has_peer runloopkit-lt || has_peer runloopkit-cb || has_peer runloopkit-fn ||
    has_peer runloopkit-re; then
    log "building loop-bench (release)"
    swift build -c release --scratch-path .build-bench --product loop-bench >&2 || {
        for peer in "${our_columns[@]}"; do broken[$peer]=1; done
    }
fi
built=$(date +%s)

# ---- run ----

workloads=(W1 W1@cpu0 W2 W3 W4 W5)
our_workloads="(ping-pong|fan-in|timer-firing|timer-churn|wake-latency)(-loop-thread|-callback|-c-function|-rearm)?"

# loop-bench's name for a workload of the shared benchmarks.md (loop-bench takes the id as well; its output names).
bench_name() { # W1..W5
    case "$1" in
    W1) echo ping-pong ;;
    W2) echo fan-in ;;
    W3) echo timer-firing ;;
    W4) echo timer-churn ;;
    W5) echo wake-latency ;;
    esac
}

# The command line of one cell, or nothing when the peer does not differ from another one there (n/a).
command_for() { # peer, workload
    local peer=$1 workload=${2%@cpu0}
    local pin=() ours
    [[ "$2" == *@cpu0 ]] && pin=(taskset -c 0)
    ours=$(bench_name "$workload")
    case "$peer" in
    limit | libuv) echo "${pin[*]} $c_out/$peer $workload ${quick[*]}" ;;
    nio) echo "${pin[*]} scripts/bench/peers/nio-bench/.build-release/release/nio-bench $workload ${quick[*]}" ;;
    nio-cb) [[ "$workload" == W3 || "$workload" == W4 ]] &&
        echo "${pin[*]} scripts/bench/peers/nio-bench/.build-release/release/nio-bench --callbacks $workload ${quick[*]}" ;;
    foundation) echo "${pin[*]} scripts/bench/peers/foundation-bench/.build-release/release/foundation-bench $workload ${quick[*]}" ;;
    runloopkit) echo "${pin[*]} .build-bench/release/loop-bench $ours --runs 1 ${quick[*]}" ;;
    runloopkit-lt) [[ "$workload" == W1 || "$workload" == W2 ]] &&
        echo "${pin[*]} .build-bench/release/loop-bench $ours-loop-thread --runs 1 ${quick[*]}" ;;
    runloopkit-cb) [[ "$workload" == W3 || "$workload" == W4 ]] &&
        echo "${pin[*]} .build-bench/release/loop-bench $ours-callback --runs 1 ${quick[*]}" ;;
    runloopkit-fn) [[ "$workload" == W2 || "$workload" == W3 || "$workload" == W4 ]] &&
        echo "${pin[*]} .build-bench/release/loop-bench $ours-c-function --runs 1 ${quick[*]}" ;;
    runloopkit-re) [[ "$workload" == W3 || "$workload" == W4 ]] &&
        echo "${pin[*]} .build-bench/release/loop-bench $ours-rearm --runs 1 ${quick[*]}" ;;
    esac
}

for workload in "${workloads[@]}"; do
    for ((round = 1; round <= runs; round++)); do
        for peer in "${peer_list[@]}"; do
            cmd=$(command_for "$peer" "$workload")
            [[ -z "$cmd" ]] && continue
            if [[ -n "${broken[$peer]:-}" ]]; then
                echo "$workload $peer FAILED" >>"$results"
                continue
            fi
            log "$workload round $round/$runs: $peer"
            # shellcheck disable=SC2086
            if timeout 600 $cmd >"$work/out" 2>"$work/err"; then
                # A peer's lines start with the shared id (W3), loop-bench's with its name (timer-firing-callback).
                grep -E "^(W[0-9]|$our_workloads)(@cpu[0-9]+)? [a-z0-9_]+ -?[0-9.]+\$" "$work/out" |
                    awk -v w="$workload" -v p="$peer" '{ print w, p, $2, $3 }' >>"$results"
            else
                log "$workload $peer FAILED (round $round): $(tail -n 3 "$work/err" "$work/out" | tr '\n' ' ')"
                echo "$workload $peer FAILED" >>"$results"
            fi
        done
    done
done
finished=$(date +%s)

# ---- table ----

metrics() { # workload -> "key name unit" lines
    case "$1" in
    W1 | W1@cpu0) printf '%s\n' "throughput_rt_s throughput rt/s" "rtt_mean_us rtt_mean µs" ;;
    W2) printf '%s\n' "throughput_ops_s throughput ops/s" "reordered reordered ops" ;;
    W3) printf '%s\n' "schedule_ns schedule ns" "late_p50_us late_p50 µs" "late_p99_us late_p99 µs" \
        "late_p99_steady_us late_p99_steady µs" "early early timers" ;;
    W4) echo "pair_ns pair ns" ;;
    W5) printf '%s\n' "p50_us p50 µs" "p99_us p99 µs" "cpu_pct cpu %" "samecpu_pct samecpu %" ;;
    esac
}

median() { # workload peer key -> median, empty when none
    awk -v w="$1" -v p="$2" -v k="$3" '$1 == w && $2 == p && $3 == k { print $4 }' "$results" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR == 0) exit; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

failed_cell() { grep -qx "$1 $2 FAILED" "$results"; }

pretty() { # a number: grouped integer from 1,000 up, else as measured
    awk -v x="$1" 'BEGIN {
        if (x + 0 >= 1000 || x + 0 <= -1000) {
            s = sprintf("%.0f", x); out = ""; n = length(s)
            for (i = 1; i <= n; i++) { out = out substr(s, i, 1); if ((n - i) % 3 == 0 && i < n && substr(s, i, 1) != "-") out = out "," }
            print out
        } else print x
    }'
}

table="$work/table.md"
{
    commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
    git diff --quiet HEAD 2>/dev/null || commit="$commit (with uncommitted changes)"
    cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'). Commit: \`$commit\`."
    echo "- Machine: $(uname -srm), $cpu, $(nproc) CPUs online. Load average before the run: $load_before."
    echo "- $runs fresh process(es) per cell, run in alternation, median shown$([[ ${#quick[@]} -gt 0 ]] && echo '; --quick (sizes ÷ 10)')."
    echo "  Build $((built - started)) s, runs $((finished - built)) s."
    echo "- Ratios are RunLoopKit's (\`runloopkit\`) figure ÷ the other's: above 1 is better for throughput, below 1"
    echo "  for everything else. \"best peer\" is the best non-RunLoopKit column of the row. n/a: the peer does not differ"
    echo "  from another column there (\`nio-cb\` from \`nio\` outside W3/W4, \`runloopkit-lt\` (\`LoopThread.perform\`) from"
    echo "  \`runloopkit\` outside W1/W2, \`runloopkit-cb\` (one-shot callbacks, \`Loop.schedule(at:)\`) outside W3/W4,"
    echo "  \`runloopkit-fn\` (allocation-free calls of a C function with one word, as the C peers post and schedule:"
    echo "  \`perform(with:_:)\` in W2, \`schedule(at:with:_:)\` in W3/W4) outside W2/W3/W4, \`runloopkit-re\`"
    echo "  (\`LoopTimer\`s made before the clock and re-armed with \`setNextFireTime(_:)\`, as the C peers keep their"
    echo "  timer handles) outside W3/W4."
    echo
    header="| workload | metric | unit |"
    rule="|---|---|---|"
    for peer in "${peer_list[@]}"; do
        header+=" $peer |"
        rule+="---:|"
    done
    ratios=0
    if has_peer runloopkit; then
        ratios=1
        header+=" runloopkit ÷ limit | runloopkit ÷ best peer |"
        rule+="---:|---:|"
    fi
    echo "$header"
    echo "$rule"
    for workload in "${workloads[@]}"; do
        while read -r key name unit; do
            row="| $workload | $name | $unit |"
            declare -A value=()
            for peer in "${peer_list[@]}"; do
                if [[ -z "$(command_for "$peer" "$workload")" ]]; then
                    row+=" n/a |"
                elif failed_cell "$workload" "$peer"; then
                    row+=" FAILED |"
                else
                    value[$peer]=$(median "$workload" "$peer" "$key")
                    row+=" $([[ -n "${value[$peer]}" ]] && pretty "${value[$peer]}" || echo "—") |"
                fi
            done
            if [[ $ratios -eq 1 ]]; then
                ours=${value[runloopkit]:-}
                case "$key" in
                reordered | early | samecpu_pct) row+=" | |" ;;
                *)
                    higher=0
                    [[ "$key" == throughput_* ]] && higher=1
                    best="" best_peer=""
                    for peer in limit libuv nio nio-cb foundation; do
                        v=${value[$peer]:-}
                        [[ -z "$v" ]] && continue
                        if [[ -z "$best" ]] || awk -v a="$v" -v b="$best" -v h=$higher 'BEGIN { exit !(h ? a > b : a < b) }'; then
                            best=$v best_peer=$peer
                        fi
                    done
                    ratio() { [[ -n "$1" && -n "$2" ]] && awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "—"; else printf "%.2f\n", a / b }' || echo "—"; }
                    row+=" $(ratio "$ours" "${value[limit]:-}") | $(ratio "$ours" "$best")${best_peer:+ ($best_peer)} |"
                    ;;
                esac
            fi
            unset value
            echo "$row"
        done < <(metrics "$workload")
    done
    # Each RunLoopKit form against the peer its target names: the timer rows against libuv, the posting and
    # wake-up rows against the C floor (limit).
    if has_peer limit && has_peer libuv; then
        echo
        echo "Each RunLoopKit form ÷ the peer named (the same medians; below 1 is better, except for throughput):"
        echo
        echo "| workload | metric | ÷ | runloopkit | runloopkit-lt | runloopkit-cb | runloopkit-fn | runloopkit-re |"
        echo "|---|---|---|---:|---:|---:|---:|---:|"
        while read -r workload key name against; do
            row="| $workload | $name | $against |"
            base=$(median "$workload" "$against" "$key")
            for peer in "${our_columns[@]}"; do
                v=""
                has_peer "$peer" && [[ -n "$(command_for "$peer" "$workload")" ]] && v=$(median "$workload" "$peer" "$key")
                if [[ -n "$v" && -n "$base" ]]; then
                    row+=" $(awk -v a="$v" -v b="$base" 'BEGIN { if (b == 0) print "—"; else printf "%.2f\n", a / b }') |"
                else
                    row+=" |"
                fi
            done
            echo "$row"
        done <<'ROWS'
W1@cpu0 throughput_rt_s throughput limit
W2 throughput_ops_s throughput limit
W3 schedule_ns schedule libuv
W3 late_p99_steady_us late_p99_steady libuv
W4 pair_ns pair libuv
W5 p50_us p50 limit
W5 p99_us p99 limit
W5 cpu_pct cpu limit
ROWS
    fi
} >"$table"

echo
cat "$table"
echo
log "done in $((finished - started)) s (build $((built - started)) s, runs $((finished - built)) s)"

if [[ $write -eq 1 ]]; then
    doc=Docs/Benchmarks.md
    if grep -q '<!-- compare-peers:begin -->' "$doc" && grep -q '<!-- compare-peers:end -->' "$doc"; then
        awk -v table="$table" '
            /<!-- compare-peers:begin -->/ { print; while ((getline line < table) > 0) print line; skipping = 1; next }
            /<!-- compare-peers:end -->/ { skipping = 0 }
            !skipping { print }' "$doc" >"$work/doc" && cp "$work/doc" "$doc"
        log "wrote the table into $doc"
    else
        log "no compare-peers markers in $doc: the table was not written"
    fi
fi
exit 0
