import Glibc
import RunLoopKitSystem
import TestSupport
import Testing

@testable import RunLoopKit

/// The core on the syscall layer: how a `SystemError` becomes a `LoopError`, and the close-on-exec flag on every
/// descriptor a loop opens (the layer's own calls are `SyscallTests`, in RunLoopKitSystemTests).
@Suite struct LoopSyscallTests {
    @Test func loopErrorClassifiesSystemErrors() {
        let cases: [(CInt, LoopError.Code)] = [
            (EBADF, .badDescriptor), (EEXIST, .descriptorAlreadyRegistered), (EPERM, .descriptorNotPollable),
            (ENOMEM, .systemCallFailed),
        ]
        for (code, expected) in cases {
            let error = LoopError(SystemError(call: "epoll_ctl", errno: code), context: "testing")
            #expect(error.code == expected)
            #expect(error.errno == code)
            #expect(error.message.contains("epoll_ctl"))
        }
    }

    @Test func everyDescriptorTheLoopOpensIsCloseOnExec() {
        let flags = Box<[Bool]>()
        ItemsSupport.onLoopThread { loop in
            let poller = loop.poller
            flags.value = [poller.epoll, poller.wakeUpDescriptor, poller.timerDescriptor].map {
                fcntl($0, F_GETFD) & FD_CLOEXEC != 0
            }
        }
        #expect(flags.value == [true, true, true])
    }
}
