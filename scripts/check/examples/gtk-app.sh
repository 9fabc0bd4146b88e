#!/usr/bin/env bash
# Examples/GTKApp in a real window under Xvfb: builds it, runs it for 5 s (it closes its window itself), saves a
# screenshot of the screen once the worker's answer is shown, and checks that the app exited 0, that its loop timer
# ticked and that the worker's answer came back to the main thread. Installs libgtk-4-dev, xvfb, dbus and imagemagick
# with apt-get where missing. Argument: where to save the screenshot (default .build/examples/gtk-app.png).
# Takes about 7-10 s once RunLoopKit is built in .build/examples; about 50 s from nothing on 2 busy CPUs.
set -euo pipefail

picture="${1:+$(realpath -m "$1")}"  # Absolute, from where the script was called.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."  # The repository root.
picture="${picture:-$PWD/.build/examples/gtk-app.png}"
mkdir -p "$(dirname "$picture")"
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

source "$PWD/scripts/check/lib/apt.sh"  # apt_install
missing=()
pkg-config --exists gtk4 2>/dev/null || missing+=(libgtk-4-dev)
command -v xvfb-run >/dev/null 2>&1 || missing+=(xvfb xauth)
command -v dbus-run-session >/dev/null 2>&1 || missing+=(dbus)
command -v import >/dev/null 2>&1 && command -v identify >/dev/null 2>&1 || missing+=(imagemagick)
if ((${#missing[@]} > 0)); then apt_install "${missing[@]}"; fi

seconds=5
# One scratch path for every example (scripts/check/examples.sh runs them all), so RunLoopKit is built once; it comes
# in by path, so plan afresh each time (a cached build plan misses files added to it).
scratch="$PWD/.build/examples"
swift build --package-path Examples/GTKApp --scratch-path "$scratch" --disable-build-manifest-caching >&2
app="$(swift build --package-path Examples/GTKApp --scratch-path "$scratch" --show-bin-path)/GTKApp"

output="$(mktemp)"
trap 'rm -f "$output"' EXIT
# Inside the virtual X server (24-bit colour) and a session bus of its own: start the app, wait for the worker's
# answer and one more tick of the clock after it (GTK has drawn the answer by then), take the picture, wait for the
# app. GTK_A11Y=none: no accessibility bus, whose daemons would outlive the check. stdbuf: print() to a file buffers.
GTK_A11Y=none xvfb-run -a -s "-screen 0 520x260x24" dbus-run-session -- bash -c '
    app="$1" seconds="$2" output="$3" picture="$4"
    stdbuf -oL "$app" "$seconds" >"$output" 2>&1 &
    pid=$!
    for _ in $(seq 300); do  # At most 30 s.
        sed -n "/^answer 1:/,\$p" "$output" | grep -q "^tick " && { import -window root "$picture"; break; }
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    wait "$pid"
' gtk-app "$app" "$seconds" "$output" "$picture" && status=0 || status=$?

cat "$output"
fail() { echo "FAIL gtk-app: $*" >&2; exit 1; }
((status == 0)) || fail "exited $status"
grep -q '^answer 1: 348513 primes below 5000000' "$output" || fail "no answer from the worker before the window closed"
ticks="$(sed -n 's/^closed: clock ticks \([0-9]*\), worker answers [0-9]*$/\1/p' "$output")"
# A 100 ms timer for 5 s ticks about 50 times; a loaded machine skips some, a loop that GTK never runs none.
[[ -n "$ticks" ]] && ((ticks >= 10)) || fail "the clock ticked ${ticks:-no} times in $seconds s"
[[ -s "$picture" ]] || fail "no screenshot at $picture"
colours="$(identify -format '%k' "$picture")"
((colours > 2)) || fail "the screenshot $picture has $colours colours: nothing was drawn"
echo "PASS gtk-app: $ticks clock ticks in $seconds s, the worker's answer shown; screenshot: $picture ($colours colours)"
