#!/usr/bin/env bash
# Builds and runs Examples/FoundationTool: its command's five lines must arrive in order through the loop's
# FileDescriptorSource and NotificationCenter, Foundation's Timer must report progress under RunLoop.main.run, and
# the tool must end by itself with the command's status (0, then 1 for `false`). About 2 s once RunLoopKit is built
# (scripts/check/examples.sh builds it once for all examples).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."  # The repository root: every script runs from there (scripts/README.md).
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
# One scratch path for every example, so RunLoopKit is built once; RunLoopKit comes in by path, so plan afresh each
# time (a cached build plan misses files added to it).
scratch="$PWD/.build/examples"
cd Examples/FoundationTool
swift build --scratch-path "$scratch" --disable-build-manifest-caching
tool="$(swift build --scratch-path "$scratch" --show-bin-path)/foundation-tool"

fail() { echo "FAIL foundation-tool: $1" >&2; exit 1; }
# A timeout: a tool whose loops do not serve each other never ends.
output=$(timeout 30 "$tool") || fail "exit status $? (124: it did not end by itself)"
echo "$output"
lines=$(grep -oE '^\[[0-9.]+ s\] step [0-9]$' <<<"$output" | sed 's/.* //' | tr '\n' ' ')
[[ "$lines" == "1 2 3 4 5 " ]] || fail "the command's lines arrived as '$lines', not 1 to 5 in order"
grep -qE '^  \.\.\. [0-9.]+ s, [0-9] lines so far$' <<<"$output" || fail "Foundation's Timer never reported progress"
[[ "$(tail -n 1 <<<"$output")" =~ ^foundation-tool:\ the\ command\ exited\ with\ status\ 0\ after\ [0-9.]+\ s,\ 5\ lines$ ]] \
    || fail "no summary line"
status=0
timeout 30 "$tool" false >/dev/null || status=$?
(( status == 1 )) || fail "'foundation-tool false' exited $status, not 1"
echo "PASS foundation-tool"
