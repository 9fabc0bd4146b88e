#!/usr/bin/env bash
# Builds and runs every example in Examples/ by running each scripts/check/examples/*.sh in turn (one per example:
# each builds its package, runs it and checks what it printed). Prints a ==> line and the elapsed seconds for each,
# runs them all even after a failure, and exits 1 if any failed.
#
# The examples share one scratch path, .build/examples, so RunLoopKit is built once for all of them: about 1 minute
# from nothing on a quiet 2-CPU machine (most of it the first example's build of RunLoopKit), 10-20 s after that.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

start=$SECONDS
failed=()
for script in scripts/check/examples/*.sh; do
    name=$(basename "$script" .sh)
    echo "==> example ${name} (${script})"
    began=$SECONDS
    if "$script"; then
        echo "==> example ${name}: ok ($((SECONDS - began))s)"
    else
        echo "==> example ${name}: FAILED with exit $? ($((SECONDS - began))s)" >&2
        failed+=("$name")
    fi
done

if (( ${#failed[@]} > 0 )); then
    echo "examples.sh: ${#failed[@]} failed: ${failed[*]} ($((SECONDS - start))s)" >&2
    exit 1
fi
echo "examples.sh: every example built and ran ($((SECONDS - start))s)"
