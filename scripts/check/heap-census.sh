#!/usr/bin/env bash
# Runs loop-soak with a malloc shim (scripts/check/heap-census/live-sizes.c, through LD_PRELOAD) that counts the live
# allocations by usable size and writes the counts once a minute, then prints which sizes grew between the first
# count after the warm-up and the last one: what holds the growing bytes, by object size (#42). The counts are the
# live heap, without the chunks glibc's per-thread cache keeps; a size that grows only while traffic is in flight
# comes and goes between counts, one that holds bytes for good grows from count to count.
#
#   scripts/check/heap-census.sh 600                        every kind of traffic, 10 minutes (warm-up 120 s)
#   scripts/check/heap-census.sh 300 --only threads --load 0   further arguments go to loop-soak (loop-soak --help)
#
# LIVE_SIZES_TRACE=CLASS in the environment also names the threads that allocated the live objects of that size
# class (scripts/check/heap-census/live-sizes.c): trace-SECOND.txt beside the counts.
#
# Keeps the counts in .build/heap-census/RUN (printed). The shim adds one thread, and opens a file once a minute (a
# descriptor count taken at that moment is one higher). Exits with loop-soak's status.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).

if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

seconds="${1:-600}"
[[ $# -gt 0 ]] && shift
warmup=120
arguments=("$@")
for ((index = 0; index < ${#arguments[@]}; index++)); do
    if [[ "${arguments[index]}" == "--warmup" ]]; then warmup="${arguments[index + 1]}"; fi
done
if [[ " ${arguments[*]-} " != *" --warmup "* ]]; then arguments+=(--warmup "$warmup"); fi

swift build -c release --product loop-soak >&2
mkdir -p .build/heap-census
shim=.build/heap-census/live-sizes.so
cc -O2 -shared -fPIC -o "$shim" scripts/check/heap-census/live-sizes.c -lpthread
counts=".build/heap-census/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$counts"
echo "# counts in $counts"

status=0
env LIVE_SIZES_DIR="$PWD/$counts" LIVE_SIZES_PERIOD=60 LD_PRELOAD="$PWD/$shim" \
    .build/release/loop-soak --seconds "$seconds" "${arguments[@]}" || status=$?

# The first count after the warm-up, and the last.
mapfile -t files < <(ls "$counts" | sed -n 's/^live-\([0-9]*\)\.txt$/\1/p' | sort -n)
first=""
last=""
for second in "${files[@]}"; do
    if ((second > warmup)); then first="$second"; break; fi
done
if ((${#files[@]} > 0)); then last="${files[${#files[@]} - 1]}"; fi
if [[ -z "$first" || "$first" == "$last" ]]; then
    echo "heap-census: fewer than two counts after the warm-up; run longer" >&2
    exit "$status"
fi
echo
echo "heap-census: live allocations by usable size, second $first to second $last (chunk bytes: usable + 8)"
awk '
    FNR == 1 { file++ }
    $1 == "big" { big[file] = $2; next }
    { live[file, $1] = $2; sizes[$1] = 1 }
    END {
        rows = "sort -rn | head -25"
        for (size in sizes) {
            before = live[1, size] + 0; after = live[2, size] + 0
            total[1] += before * (size + 8); total[2] += after * (size + 8)
            if (after != before) printf "%10d B  %8d-byte objects: %7d -> %7d\n", (after - before) * (size + 8), size, before, after | rows
        }
        if (big[2] != big[1]) printf "%10d B  128 KiB and more, together\n", big[2] - big[1] | rows
        close(rows)
        printf "total: %d -> %d bytes live (%d)\n", total[1] + big[1], total[2] + big[2], total[2] + big[2] - total[1] - big[1]
    }' "$counts/live-$first.txt" "$counts/live-$last.txt"
exit "$status"
