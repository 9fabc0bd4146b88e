#!/usr/bin/env bash
# Checks that a trap of the library says why in a release build: compiles a program that runs another thread's loop
# (a programming error) with -O against the release build's objects, runs it, and expects it to die with the
# library's message on standard error. (`precondition` would print nothing under -O; the library traps through
# trap/require, which always print, and scripts/format.sh --lint refuses precondition in the library.)
#
# Usage: scripts/release-trap-check.sh   (after `swift build -c release`)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=$(swift build -c release --show-bin-path)
list="$build/loop-bench.product/Objects.LinkFileList"
[[ -f "$list" ]] || { echo "release-trap-check: no $list (run swift build -c release first)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/main.swift" <<'SWIFT'
import RunLoopKit

let other = try LoopThread(name: "other")
_ = other.loop.run(in: .default, for: .milliseconds(1))  // Another thread's loop: a programming error.
print("not trapped")
SWIFT
mapfile -t objects < <(grep -E "/(RunLoopKit|CRunLoopShims)\.build/" "$list")
swiftc -O -swift-version 6 "$work/main.swift" -I "$build/Modules" \
    -Xcc -fmodule-map-file="$build/CRunLoopShims.build/module.modulemap" -Xcc -I"$PWD/Sources/CRunLoopShims/include" \
    "${objects[@]}" -o "$work/trap"
set +e
{ SWIFT_BACKTRACE=enable=no "$work/trap" >"$work/out" 2>"$work/err"; } 2>/dev/null  # Not bash's own crash line.
status=$?
set -e
expected="must be called on the loop's own thread"
if (( status == 0 )) || ! grep -q "$expected" "$work/err"; then
    echo "release-trap-check: expected a trap saying \"$expected\"; exit $status, stderr:" >&2
    cat "$work/err" >&2
    exit 1
fi
echo "release-trap-check: the release build's trap says: $(grep -m1 -o 'Fatal error: .*' "$work/err")"
