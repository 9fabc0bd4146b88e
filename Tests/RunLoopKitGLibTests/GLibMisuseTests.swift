import Glibc
import RunLoopKit
import RunLoopKitGLib
import TestSupport
import Testing

/// Misuse of the bridge that is a programming error traps with a message that says what was wrong (exit tests).
@Suite(.enabled(if: GLibTesting.isAvailable, "GLib is not installed"))
struct GLibMisuseTests {
    private static func standardError(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    @Test func aContextIteratedOnAnotherThreadThanTheAttachedLoopsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let glib = GLibTesting.calls!
            let context = SharedContext(glib.newContext())
            // A loop whose thread lives on without running it: GLib's first iteration runs a pass...
            let (loop, _) = startLoopThread { _ in while true { usleep(100_000) } }
            _ = try? loop.attachToGLib(context: context.pointer)
            glib.iterate(context.pointer, mayBlock: false)  // ...on this thread, which is not the loop's.
        }
        #expect(Self.standardError(result).contains("iterated on another thread than the loop's own"))
    }

    @Test func drivingAContextFromAnotherThreadThanTheLoopsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let running = ItemsSupport.startRunningLoop()
            _ = try? running.loop.driveGLib(context: GLibTesting.calls!.newContext())
        }
        #expect(Self.standardError(result).contains("driveGLib(context:mode:) must be called on the loop's own thread"))
    }

    @Test func invalidatingADriverFromAnotherThreadTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let driving = GLibDrivingThread()
            driving.driver.invalidate()
        }
        #expect(Self.standardError(result).contains("GLibDriver.invalidate() must be called on the thread"))
    }
}
