import Glibc
import RunLoopKitSystem
import Testing

@testable import RunLoopKit

/// `pollDescriptor` is an epoll set made when a host first asks for it, so making it can fail (`EMFILE`). Scripted
/// faults are process-wide: each scenario runs in a child process of its own.
@Suite struct HostDescriptorFaultTests {
    /// The bridges' path: a typed error, nothing left open, and the next call makes the set.
    @Test func makingTheHostSetWithNoDescriptorLeftThrowsAndALaterCallWorks() async {
        await #expect(processExitsWith: .success) {
            TestThread {
                let loop = Loop.current
                let before = openDescriptorCount()
                let (code, _) = FaultInjection.with([.init("epoll_create1", EMFILE)]) { () -> LoopError.Code? in
                    do throws(LoopError) {
                        _ = try loop.makePollDescriptor()
                        return nil
                    } catch {
                        return error.errno == EMFILE ? error.code : nil
                    }
                }
                guard code == .systemCallFailed, openDescriptorCount() == before else { exit(1) }
                guard loop.pollDescriptor >= 0, openDescriptorCount() == before + 1 else { exit(2) }
            }.join()
            exit(0)
        }
    }

    /// The public getter cannot throw: it traps, naming the reason, as `Loop.current` does.
    @Test func pollDescriptorWithNoDescriptorLeftTrapsWithTheReason() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            TestThread {
                let loop = Loop.current
                FaultInjection.install([.init("epoll_create1", EMFILE)])
                _ = loop.pollDescriptor
            }.join()
            exit(0)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("pollDescriptor cannot make the host's epoll set"), "\(message)")
    }
}
