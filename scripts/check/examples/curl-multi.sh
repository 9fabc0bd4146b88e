#!/usr/bin/env bash
# Examples/CurlMulti against a local HTTP server: builds it, serves a temporary directory of files of known sizes with
# python3's http.server on a free localhost port, downloads five URLs at once (four files and one missing, a 404), and
# checks each transfer's status and size in the output, and the exit status. Stops the server. Installs
# libcurl4-openssl-dev (and python3) with apt-get where missing.
# Takes about 2-3 s once RunLoopKit is built in .build/examples; about 25 s from nothing on 2 busy CPUs.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../../.."  # The repository root.
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

source "$PWD/scripts/check/lib/apt.sh"  # apt_install
missing=()
pkg-config --exists libcurl 2>/dev/null || missing+=(libcurl4-openssl-dev)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if ((${#missing[@]} > 0)); then apt_install "${missing[@]}"; fi

# One scratch path for every example (scripts/check/examples.sh runs them all), so RunLoopKit is built once; it comes
# in by path, so plan afresh each time (a cached build plan misses files added to it).
scratch="$PWD/.build/examples"
swift build --package-path Examples/CurlMulti --scratch-path "$scratch" --disable-build-manifest-caching >&2
app="$(swift build --package-path Examples/CurlMulti --scratch-path "$scratch" --show-bin-path)/CurlMulti"

work="$(mktemp -d)"
server=""
stop_server() { if [[ -n "$server" ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi; }
trap 'stop_server; rm -rf "$work"' EXIT
mkdir "$work/files"
declare -A sizes=([large.bin]=4194304 [medium.bin]=65536 [one.bin]=1 [empty.bin]=0)
for name in "${!sizes[@]}"; do head -c "${sizes[$name]}" /dev/urandom >"$work/files/$name"; done

fail() { echo "FAIL curl-multi: $*" >&2; exit 1; }
# Port 0: the kernel picks a free port, which the server prints (-u: at once, unbuffered) once it listens.
: >"$work/server.log"  # There before the loop below reads it.
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$work/files" >"$work/server.log" 2>&1 &
server=$!
port=""
for _ in $(seq 100); do  # At most 10 s.
    port="$(sed -n 's/^Serving HTTP on 127\.0\.0\.1 port \([0-9]*\) .*/\1/p' "$work/server.log")"
    [[ -n "$port" ]] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || break
    port=""
    sleep 0.1
done
[[ -n "$port" ]] || { cat "$work/server.log" >&2; fail "the HTTP server did not answer within 10 s"; }

base="http://127.0.0.1:$port"
urls=()
for name in "${!sizes[@]}"; do urls+=("$base/$name"); done
urls+=("$base/missing.bin")
started=$SECONDS
timeout 60 "$app" "${urls[@]}" >"$work/output" 2>&1 && status=0 || status=$?
cat "$work/output"
((status == 0)) || fail "exited $status after $((SECONDS - started)) s"
for name in "${!sizes[@]}"; do
    grep -qxF "200 ${sizes[$name]} bytes $base/$name" "$work/output" || fail "no \"200 ${sizes[$name]} bytes\" for $name"
done
grep -qE "^404 [0-9]+ bytes $base/missing\.bin\$" "$work/output" || fail "no 404 for missing.bin"
summary='^5 transfers done in [0-9]+ ms, at most ([0-9]+) at once, 0 failed$'
grep -qE "$summary" "$work/output" || fail "no summary of 5 transfers, 0 failed"
most="$(sed -nE "s/$summary/\1/p" "$work/output")"
((most >= 2)) || fail "the transfers ran one at a time (at most $most at once)"
echo "PASS curl-multi: 5 transfers from $base, at most $most at once: files of ${sizes[*]} bytes and a 404"
