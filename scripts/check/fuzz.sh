#!/usr/bin/env bash
# Fuzzes every parser of input from outside the process with libFuzzer (the toolchain's -sanitize=fuzzer), under
# AddressSanitizer and a 64 MB malloc limit (an allocation in proportion to a number nobody checked is a finding):
# the systemd variables, PSI files, /proc/self/cgroup and mountinfo, inotify's event buffers. The targets are
# Tests/RunLoopKitServicesTests/HostileInput/HostileInput.swift (HostileInputTests replays the same corpus in `swift test`);
# scripts/check/fuzz/FuzzEntry.swift is libFuzzer's entry point. Each target starts from
# scripts/check/fuzz/corpus/<target>/. Exits 1 when a target crashed or named a problem (the input is kept under
# .build/fuzz/artifacts/), else 0.
#
#   scripts/check/fuzz.sh                     every target 15 s (as CI runs it: under 3 minutes with the build)
#   scripts/check/fuzz.sh 300                 every target 300 s
#   scripts/check/fuzz.sh 60 listen notify    the named targets, 60 s each
#   scripts/check/fuzz.sh --merge 300         and add what found new coverage to the committed corpus (minimized)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).

if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

# Under CI=true every run starts from the same seed (RUNLOOPKIT_FUZZ_SEED overrides it), so a red CI can be rerun as
# it was; elsewhere libFuzzer picks one from the clock, to explore anew each time.
seed=${RUNLOOPKIT_FUZZ_SEED:-$([[ "${CI:-}" == true ]] && echo 1 || echo 0)}
merge=false
if [[ "${1:-}" == "--merge" ]]; then
    merge=true
    shift
fi
seconds="${1:-15}"
shift || true
all_targets=(listen notify watchdog memory-pressure-env trigger psi proc-cgroup inotify)
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then targets=("${all_targets[@]}"); fi

# The library with coverage counters and AddressSanitizer, in a build directory of its own (debug: the targets
# reach internal parsers through @testable import).
build=.build/fuzz
swift build --build-path "$build" --sanitize address -Xswiftc -sanitize=fuzzer -Xcc -fsanitize=fuzzer-no-link \
    --target RunLoopKitServices >&2
modules="$build/debug"
objects=()
for module in CRunLoopShims CRunLoopKitServices RunLoopKitSystem RunLoopKit RunLoopKitServices; do
    objects+=("$modules/$module.build"/*.o)
done
binary="$build/runloopkit-fuzz"
swiftc -parse-as-library -swift-version 6 -sanitize=fuzzer,address -g \
    -I "$modules/Modules" -I Sources/CRunLoopShims/include -I Sources/CRunLoopKitServices/include \
    -Xcc -fmodule-map-file="$modules/CRunLoopShims.build/module.modulemap" \
    -Xcc -fmodule-map-file="$modules/CRunLoopKitServices.build/module.modulemap" \
    Tests/RunLoopKitServicesTests/HostileInput/HostileInput.swift scripts/check/fuzz/FuzzEntry.swift "${objects[@]}" -ldl \
    -o "$binary" 2> >(grep -v "Cannot export local symbol" >&2)

artifacts="$build/artifacts"
mkdir -p "$artifacts"
failed=0
printf '%-20s %12s %8s %10s %8s  %s\n' target executions seconds exec/s corpus result
for target in "${targets[@]}"; do
    corpus="scripts/check/fuzz/corpus/$target"
    mkdir -p "$corpus"
    work=$(mktemp -d)
    log="$build/$target.log"
    started=$(date +%s)
    status=0
    # The Swift runtime's backtracer would stand in AddressSanitizer's way; leaks are not this fuzzer's findings
    # (the runtime's caches look like leaks to LeakSanitizer).
    RUNLOOPKIT_FUZZ_TARGET="$target" SWIFT_BACKTRACE=enable=no "$binary" \
        -max_total_time="$seconds" -seed="$seed" -malloc_limit_mb=64 -rss_limit_mb=1024 -max_len=4096 -detect_leaks=0 \
        -print_final_stats=1 -artifact_prefix="$artifacts/$target-" "$work" "$corpus" >"$log" 2>&1 || status=$?
    elapsed=$(($(date +%s) - started))
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    executions=${executions:-0}
    result=ok
    if [[ $status -ne 0 ]]; then
        result="FAILED (exit $status, see $log)"
        failed=1
    fi
    if $merge; then
        RUNLOOPKIT_FUZZ_TARGET="$target" SWIFT_BACKTRACE=enable=no "$binary" -merge=1 -max_len=4096 \
            -detect_leaks=0 "$corpus" "$work" >>"$log" 2>&1 || true
    fi
    rm -rf "$work"
    printf '%-20s %12s %8s %10s %8s  %s\n' "$target" "$executions" "$elapsed" \
        "$((executions / (elapsed > 0 ? elapsed : 1)))" "$(find "$corpus" -type f | wc -l)" "$result"
    if [[ $status -ne 0 ]]; then grep -E "ERROR|Fatal error|==[0-9]+==|Test unit written" "$log" | head -5 >&2; fi
done
exit $failed
