#!/usr/bin/env bash
# Builds loop-soak in release mode and runs it: every kind of item, cross-thread traffic and LoopThread churn for
# the given number of seconds (without arguments 300, with a 120 s warm-up) under one busy thread per CPU, then the
# report (exactly once, descriptors, threads, and memory judged by the slope of malloc's bytes in use and of the RSS
# after the warm-up).
# Exits with loop-soak's status: 0 every check passed, 1 one failed.
#
#   scripts/check/soak.sh            300 s with a 120 s warm-up, as CI runs it
#   scripts/check/soak.sh 600        the 10-minute soak of Docs/Reliability.md
#   scripts/check/soak.sh 60 --load 4 --seed 7   further arguments go to loop-soak (loop-soak --help)
#   scripts/check/soak.sh 120 --only timers --samples /tmp/timers.samples   one kind of traffic, every sample to a file
#   GLIBC_TUNABLES=glibc.malloc.tcache_count=0 scripts/check/soak.sh 600   malloc's bytes in use exactly the live heap
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).

if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

if [[ $# -eq 0 ]]; then set -- 300 --warmup 120; fi  # As CI runs it.
seconds="$1"
shift

swift build -c release --product loop-soak >&2
echo "# machine: $(uname -srm), $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    "$(git diff --quiet HEAD -- Sources 2>/dev/null || echo '(with uncommitted changes)')"
exec .build/release/loop-soak --seconds "$seconds" "$@"
