#!/usr/bin/env bash
# Model-checks the loop's wake-up handshake (Sources/RunLoopKit/Pass/WakeUpHandshake.pml) with spin: the model as
# the code is must have no error (no lost wake-up, nothing run twice, nothing lost), and the deliberately broken
# variants (the loop looks for work before announcing that it sleeps; it clears the inbox's flag after releasing
# the inbox's lock) must be caught, which proves the check bites.
# Installs spin with apt-get when it is missing. Usage: scripts/check/check-handshake.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
model="$PWD/Sources/RunLoopKit/Pass/WakeUpHandshake.pml"

source scripts/check/lib/apt.sh  # apt_install
command -v spin >/dev/null 2>&1 || apt_install spin

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# check VARIANT-FLAGS : prints spin's summary line; echoes the error count.
errors_of() {
    (cd "$work" && rm -f pan pan.* && spin "$@" -a "$model" >/dev/null && gcc -O2 -DSAFETY -o pan pan.c \
        && ./pan -m200000 >report.txt 2>&1) || { cat "$work/report.txt" >&2 2>/dev/null; return 2; }
    grep -E 'errors:|states, stored' "$work/report.txt" | sed 's/^/    /' >&2
    sed -nE 's/.*errors: ([0-9]+).*/\1/p' "$work/report.txt"
}

echo "handshake model as the code is:" >&2
errors=$(errors_of)
if [[ "$errors" != 0 ]]; then
    echo "check-handshake: the model of the code has $errors error(s): a lost wake-up or a double run" >&2
    exit 1
fi
for variant in BROKEN_CHECK_BEFORE_ANNOUNCE BROKEN_FLAG_CLEARED_AFTER_UNLOCK; do
    echo "broken variant $variant, which must be caught:" >&2
    errors=$(errors_of -D"$variant")
    if [[ "$errors" == 0 ]]; then
        echo "check-handshake: the broken variant $variant passed: the model no longer detects lost wake-ups" >&2
        exit 1
    fi
done
echo "check-handshake: ok (the model holds; the broken variants are caught)" >&2
