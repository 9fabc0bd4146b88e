#!/usr/bin/env bash
# Builds Examples/SystemdService and runs it as systemd would, under systemd-socket-activate on a Unix socket, with
# NOTIFY_SOCKET and WATCHDOG_USEC aimed at a datagram socket this script reads: READY=1 and WATCHDOG=1 must arrive, a
# client's line and `stats` must be answered, and on SIGTERM the client must get `bye`, STOPPING=1 must arrive and the
# service must exit 0. About 5 s once RunLoopKit is built (scripts/check/examples.sh builds it once for all examples).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."  # The repository root: every script runs from there (scripts/README.md).
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
command -v systemd-socket-activate >/dev/null || { echo "systemd-socket-activate is missing (Debian's systemd)" >&2; exit 1; }
# One scratch path for every example, so RunLoopKit is built once; RunLoopKit comes in by path, so plan afresh each
# time (a cached build plan misses files added to it).
scratch="$PWD/.build/examples"
(cd Examples/SystemdService && swift build --scratch-path "$scratch" --disable-build-manifest-caching)
service="$(cd Examples/SystemdService && swift build --scratch-path "$scratch" --show-bin-path)/line-service"

python3 - "$service" <<'PYTHON'
import os, select, shutil, signal, socket, subprocess, sys, tempfile, time

service = sys.argv[1]
work = tempfile.mkdtemp(prefix="line-service-")
listen_path, notify_path = f"{work}/lines.sock", f"{work}/notify.sock"
notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
notify.bind(notify_path)
messages = []
activator = None

def fail(why):
    if activator and activator.poll() is None:
        activator.kill()  # No service left behind.
    shutil.rmtree(work)
    print(f"FAIL systemd-service: {why}; notify messages: {messages}", file=sys.stderr)
    sys.exit(1)

def read_notify(until, deadline=10):
    """Collects notify datagrams until one holds `until`, within `deadline` seconds."""
    end = time.monotonic() + deadline
    while not any(until in m for m in messages):
        left = end - time.monotonic()
        if left <= 0 or not select.select([notify], [], [], left)[0]:
            fail(f"no {until} within {deadline} s")
        messages.append(notify.recv(4096).decode())

activator = subprocess.Popen(
    ["systemd-socket-activate", "-l", listen_path,
     "-E", f"NOTIFY_SOCKET={notify_path}", "-E", "WATCHDOG_USEC=400000", service],
    stderr=subprocess.PIPE, text=True)
end = time.monotonic() + 10
while not os.path.exists(listen_path):
    if time.monotonic() > end or activator.poll() is not None:
        fail("systemd-socket-activate did not listen")
    time.sleep(0.02)

client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
client.settimeout(10)
client.connect(listen_path)  # The first connection starts the service.
replies = client.makefile("r")
client.sendall(b"hello\n")
if (reply := replies.readline().strip()) != "echo hello":
    fail(f"'hello' answered {reply!r}")
client.sendall(b"stats\n")
stats = replies.readline().strip()
if not (stats.startswith("connections 1 open, 1 accepted; lines 2;") and "loop passes" in stats):
    fail(f"'stats' answered {stats!r}")
read_notify("READY=1")
read_notify("WATCHDOG=1")

activator.send_signal(signal.SIGTERM)  # systemd-socket-activate execs the service: this pid is the service's.
if (reply := replies.readline().strip()) != "bye":
    fail(f"after SIGTERM the client got {reply!r}, not 'bye'")
if replies.readline() != "":
    fail("the connection was not closed after 'bye'")
read_notify("STOPPING=1")
try:
    status = activator.wait(timeout=10)
except subprocess.TimeoutExpired:
    activator.kill()
    fail("still running 10 s after SIGTERM")
log = activator.stderr.read()
print(log, end="")
if status != 0 or "line-service: shutting down" not in log:
    fail(f"exit status {status}")
shutil.rmtree(work)
print(f"stats: {stats}")
print(f"notify messages: {messages}")
print("PASS systemd-service")
PYTHON
