#!/usr/bin/env bash
# Checks that traps of the library say why in a release build: compiles programs that run another thread's loop and
# that touch a LoopBound off its loop's thread (programming errors) with -O against the release build's objects, runs
# them, and expects each to die with the library's message on standard error. (`precondition` would print nothing
# under -O; the library traps through trap/require, which always print, and scripts/check/format.sh --lint refuses
# precondition in the library.)
#
# Usage: scripts/check/release-trap-check.sh   (after `swift build -c release`)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
build=$(swift build -c release --show-bin-path)
list="$build/loop-bench.product/Objects.LinkFileList"
[[ -f "$list" ]] || { echo "release-trap-check: no $list (run swift build -c release first)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# check NAME EXPECTED : compiles $work/NAME.swift with -O against the release objects, runs it, and expects it to die
# with EXPECTED on standard error.
mapfile -t objects < <(grep -E "/(RunLoopKit|RunLoopKitSystem|CRunLoopShims)\.build/" "$list")
check() {
    local name=$1 expected=$2
    swiftc -O -swift-version 6 "$work/$name.swift" -module-name "$name" -I "$build/Modules" \
        -Xcc -fmodule-map-file="$build/CRunLoopShims.build/module.modulemap" \
        -Xcc -I"$PWD/Sources/CRunLoopShims/include" "${objects[@]}" -o "$work/$name"
    set +e
    { SWIFT_BACKTRACE=enable=no "$work/$name" >"$work/$name.out" 2>"$work/$name.err"; } 2>/dev/null  # Not bash's.
    local status=$?
    set -e
    if (( status == 0 )) || ! grep -q "$expected" "$work/$name.err"; then
        echo "release-trap-check: $name: expected a trap saying \"$expected\"; exit $status, stderr:" >&2
        cat "$work/$name.err" >&2
        exit 1
    fi
    echo "release-trap-check: $name: the release build's trap says: $(grep -m1 -o 'Fatal error: .*' "$work/$name.err")"
}

cat >"$work/runOtherLoop.swift" <<'SWIFT'
import RunLoopKit

let other = try LoopThread(name: "other")
_ = other.loop.run(in: .default, for: .milliseconds(1))  // Another thread's loop: a programming error.
print("not trapped")
SWIFT
check runOtherLoop "must be called on the loop's own thread"

cat >"$work/loopBoundOffThread.swift" <<'SWIFT'
import RunLoopKit

let other = try LoopThread(name: "other")
let bound = LoopBound(0, on: other.loop)
bound.value += 1  // Touched off its loop's thread: a programming error.
print("not trapped")
SWIFT
check loopBoundOffThread "touch its value only on that loop's thread"
