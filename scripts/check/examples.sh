#!/usr/bin/env bash
# Builds and runs every example in Examples/ by running each scripts/check/examples/*.sh in turn (one per example:
# each builds its package, runs it and checks what it printed). Prints a ==> line and the elapsed seconds for each,
# runs them all even after a failure, and exits 1 if any failed.
#
# The examples share one scratch path, .build/examples, so RunLoopKit is built once for all of them (not in .build/,
# whose state belongs to the root package). On a 2-CPU machine busy with other builds: about 1 minute from nothing,
# most of it the first example's build of RunLoopKit; about 10 s when nothing changed (the GTK app runs for 5 s).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

shopt -s nullglob
scripts=(scripts/check/examples/*.sh)
if (( ${#scripts[@]} == 0 )); then
    echo "examples.sh: no scripts in scripts/check/examples/" >&2
    exit 1
fi

start=$SECONDS
failed=()
for script in "${scripts[@]}"; do
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
echo "examples.sh: all ${#scripts[@]} examples built and ran ($((SECONDS - start))s)"
