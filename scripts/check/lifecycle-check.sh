#!/usr/bin/env bash
# Builds and runs scripts/check/lifecycle-check: RunLoopKit beside swift-service-lifecycle (a LoopThread as a Service in
# a ServiceGroup that owns SIGTERM), loop metrics through swift-metrics and a StallMonitor report through swift-log, in
# a package of its own (RunLoopKit keeps no dependencies). First it copies the ```swift blocks between the markers
# "lifecycle-check recipes: begin" and "…: end" of Docs/Services.md into the package, so the recipes the page shows
# are the code that is compiled and run. Prints each check and PASS, or FAIL and exits 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

recipes=scripts/check/lifecycle-check/Sources/lifecycle-check
rm -f "$recipes"/Recipe*.swift
awk -v folder="$recipes" '
    /<!-- lifecycle-check recipes: begin -->/ { inside = 1; next }
    /<!-- lifecycle-check recipes: end -->/ { inside = 0; next }
    inside && /^```swift$/ { count++; file = sprintf("%s/Recipe%d.swift", folder, count); next }
    inside && file != "" && /^```$/ { close(file); file = ""; next }
    file != "" { print > file }
    END { if (count == 0) { print "lifecycle-check.sh: no recipes between the markers in Docs/Services.md" > "/dev/stderr"; exit 1 } }
' Docs/Services.md
echo "copied $(ls "$recipes"/Recipe*.swift | wc -l) recipes from Docs/Services.md" >&2

cd scripts/check/lifecycle-check

# RunLoopKit comes in through a link to the repository, whose new files a cached build plan would miss: plan afresh.
swift build --disable-build-manifest-caching >&2
"$(swift build --show-bin-path)/lifecycle-check"
