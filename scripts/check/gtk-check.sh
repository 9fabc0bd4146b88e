#!/usr/bin/env bash
# GTK 4 on Loop.main in real windows under Xvfb, in a package of its own (scripts/check/gtk-check; RunLoopKit keeps no
# dependencies): Debian's libgtk-4-dev, xvfb and dbus are installed with apt-get where missing.
#   1. The GTK example of Docs/LivingWithOtherEventLoops.md (its ```swift gtk block), pasted as main.swift, compiles
#      and runs: it must show its greeting ("showing: …") within 30 s; it is then ended with SIGTERM (a GTK app runs
#      until its window closes).
#   2. gtk-check: nested runs of an attached Loop.main keep GTK's frame clock and GLib's timeouts going; the window's
#      picture is saved to the path given (default .ci/logs/gtk-check.png).
# Prints what each printed and exits 0, or 1 on the first failure.
set -euo pipefail

picture="${1:+$(realpath -m "$1")}"  # Absolute, from where the script was called: the checks run in the package.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
root="$PWD"
picture="${picture:-$root/.ci/logs/gtk-check.png}"
mkdir -p "$(dirname "$picture")"
cd scripts/check/gtk-check
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

source "$root/scripts/check/lib/apt.sh"  # apt_install
missing=()
pkg-config --exists gtk4 2>/dev/null || missing+=(libgtk-4-dev)
command -v xvfb-run >/dev/null 2>&1 || missing+=(xvfb xauth)
command -v dbus-run-session >/dev/null 2>&1 || missing+=(dbus)
if ((${#missing[@]} > 0)); then apt_install "${missing[@]}"; fi
echo "# GTK $(pkg-config --modversion gtk4)"

# The example, as a reader pastes it: the page's one ```swift gtk block, whole.
mkdir -p Sources/gtk-example  # Not in git: it holds the generated main.swift alone.
awk '/^```swift gtk$/ { inside = 1; next } inside && /^```$/ { exit } inside { print }' \
    "$root/Docs/LivingWithOtherEventLoops.md" >Sources/gtk-example/main.swift
if [[ ! -s Sources/gtk-example/main.swift ]]; then
    echo "FAIL: no \`\`\`swift gtk block in Docs/LivingWithOtherEventLoops.md" >&2
    exit 1
fi

# RunLoopKit comes in through a link to the repository, whose new files a cached build plan would miss: plan afresh.
swift build --disable-build-manifest-caching >&2
bin="$(swift build --show-bin-path)"

# in_a_window COMMAND... : under a virtual X server and a session bus of its own (GTK asks for one).
# GTK_A11Y=none: no accessibility bus, whose daemons would outlive the check.
in_a_window() { GTK_A11Y=none xvfb-run -a dbus-run-session -- "$@"; }

output="$(mktemp)"
trap 'rm -f "$output"' EXIT
# stdbuf: the example prints with print(), which a file would buffer until exit.
in_a_window stdbuf -oL "$bin/gtk-example" >"$output" 2>&1 &
example=$!
for _ in $(seq 300); do
    grep -q '^showing: ' "$output" && break
    kill -0 "$example" 2>/dev/null || break
    sleep 0.1
done
if grep -q '^showing: ' "$output"; then
    echo "PASS gtk-example: $(grep '^showing: ' "$output")"
    pkill -TERM -x gtk-example || true
    wait "$example" || true
else
    pkill -TERM -x gtk-example || true
    wait "$example" || true
    echo "FAIL gtk-example: no greeting within 30 s; it printed:" >&2
    cat "$output" >&2
    exit 1
fi

in_a_window "$bin/gtk-check" "$picture" >"$output" 2>&1 || true
grep -E '^(PASS|FAIL) gtk-check' "$output" || { echo "FAIL gtk-check printed no result:" >&2; cat "$output" >&2; exit 1; }
grep -q '^PASS gtk-check' "$output"
