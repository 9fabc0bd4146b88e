#!/usr/bin/env bash
# Builds and runs Examples/WorkerPool: every job must come back (the known count of primes), never more than 8 in
# flight, the producer must have paused when full, each worker's jobs must add up and the workers must stop. About
# 2 s once RunLoopKit is built (scripts/check/examples.sh builds it once for all examples).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."  # The repository root: every script runs from there (scripts/README.md).
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
# One scratch path for every example, so RunLoopKit is built once; RunLoopKit comes in by path, so plan afresh each
# time (a cached build plan misses files added to it).
scratch="$PWD/.build/examples"
cd Examples/WorkerPool
swift build --scratch-path "$scratch" --disable-build-manifest-caching
output=$(timeout 60 "$(swift build --scratch-path "$scratch" --show-bin-path)/worker-pool")
echo "$output"

fail() { echo "FAIL worker-pool: $1" >&2; exit 1; }
# 200 jobs, the primes below 5,100, 5,200, ... 25,000: 349,522 in all.
grep -qE '^done in [0-9]+ ms: 200 jobs, 349522 primes counted in all$' <<<"$output" || fail "not every result came back"
grep -qE '^at most 8 jobs in flight; the producer paused [1-9][0-9]* times when full$' <<<"$output" \
    || fail "more than 8 in flight, or the producer never paused"
per_worker=$(grep -E '^worker-[1-4]: [0-9]+ jobs$' <<<"$output" | awk '{ sum += $2 } END { print NR, sum }')
[[ "$per_worker" == "4 200" ]] || fail "the workers' jobs do not add up to 200 on 4 workers ($per_worker)"
[[ "$(tail -n 1 <<<"$output")" == "workers stopped" ]] || fail "the workers were not stopped"
echo "PASS worker-pool"
