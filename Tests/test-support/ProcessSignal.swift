import Glibc
import RunLoopKitSystem

/// The calls tests send signals with, wrapped once (EINTR retried, errno as a `SystemError`).
package enum ProcessSignal {
    /// Sends `signal` to process `process` (any of its threads that does not block it receives it).
    ///
    /// The corresponding C call is `kill(2)`.
    package static func send(_ signal: CInt, to process: pid_t) throws(SystemError) {
        _ = try retryingOnInterrupt("kill") { kill(process, signal) }
    }

    /// Sends `signal` to the calling thread; a handler for it has run when this returns.
    ///
    /// The corresponding C call is `raise(3)`.
    package static func raiseOnCallingThread(_ signal: CInt) throws(SystemError) {
        let status = raise(signal)
        if status != 0 { throw SystemError(call: "raise", errno: errno) }
    }
}
