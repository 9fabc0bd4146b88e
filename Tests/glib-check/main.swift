// The GLib bridge on the process's real main thread: Dispatch's main queue, the main actor and GLib's default
// context. Tests/RunLoopKitTests/GLib/GLibMainThreadTests.swift runs one scenario per process and reads the last
// line: "PASS <scenario> <figures>" (exit 0) or "FAIL <scenario>: <why>" (exit 1).
import Glibc

print("FAIL: not written yet")
exit(1)
