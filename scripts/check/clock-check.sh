#!/usr/bin/env bash
# Builds and runs scripts/check/clock-check: swift-async-algorithms' `debounce` on a loop's `LoopClock`, in a package of
# its own (RunLoopKit keeps no dependencies). Prints the debounced values and PASS, or FAIL and exits 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
cd scripts/check/clock-check
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
# RunLoopKit comes in through a link to the repository, whose new files a cached build plan would miss: plan afresh.
swift build --disable-build-manifest-caching >&2
"$(swift build --show-bin-path)/clock-check"
