#!/usr/bin/env bash
# Formats the package's Swift sources and the examples' with swift-format, using the repository's .swift-format.
#
#   scripts/check/format.sh          rewrite Sources/, Tests/ and Examples/ in place
#   scripts/check/format.sh --lint   check only: exits non-zero on any finding (used by .ci/run)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).

if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

mode=format
case "${1:-}" in
    "") ;;
    --lint) mode=lint ;;
    -h | --help)
        sed -n '2,5p' "${BASH_SOURCE[0]}"
        exit 0
        ;;
    *)
        echo "usage: scripts/check/format.sh [--lint]" >&2
        exit 2
        ;;
esac

paths=()
for dir in Sources Tests Examples; do
    if [[ -d "$dir" ]]; then
        paths+=("$dir")
    fi
done
if (( ${#paths[@]} == 0 )); then
    echo "format.sh: no Sources/ or Tests/ directory" >&2
    exit 1
fi

if [[ "$mode" == lint ]]; then
    swift format lint --strict --recursive --parallel --configuration .swift-format "${paths[@]}"
    # The library traps through trap(_:) / require(_:_:) (Sources/RunLoopKit/System/Trap.swift): precondition,
    # preconditionFailure and assert print no message in release builds, so a user's trap would not say why.
    if grep -rnE '(^|[^A-Za-z_.])(precondition|preconditionFailure|assert|assertionFailure)\(' \
        --include='*.swift' Sources/RunLoopKit Sources/RunLoopKitAsyncMain Sources/RunLoopKitGLib | grep -vE '^[^:]+:[0-9]+:\s*//'; then
        echo "format.sh: use trap(_:) or require(_:_:) in the library, not precondition or assert (see above)" >&2
        exit 1
    fi
    echo "format.sh: lint clean (${paths[*]})"
else
    swift format format --in-place --recursive --configuration .swift-format "${paths[@]}"
fi
