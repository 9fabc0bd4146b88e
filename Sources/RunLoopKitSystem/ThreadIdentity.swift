import CRunLoopShims
import Glibc

/// Who the calling thread is, in the two ways the loop needs.
package enum ThreadIdentity {
    /// The kernel thread id of the calling thread.
    ///
    /// The corresponding C call is `gettid(2)`.
    package static func currentThreadID() -> pid_t {
        crunloop_gettid()
    }

    /// Answers whether the calling thread is the process's main thread (its thread id is the process id).
    package static var isMainThread: Bool {
        crunloop_gettid() == getpid()
    }

    /// The name of thread `threadID` of this process (as `pthread_setname_np` or `prctl` set it), or `nil` if it
    /// cannot be read (the thread exited, or `/proc` is not mounted).
    ///
    /// The corresponding C calls are `open(2)` and `read(2)` of `/proc/self/task/<id>/comm`.
    package static func name(of threadID: pid_t) -> String? {
        guard let descriptor = try? FileDescriptorCalls.openForReading("/proc/self/task/\(threadID)/comm") else {
            return nil
        }
        defer { FileDescriptorCalls.close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 32)
        guard let count = try? FileDescriptorCalls.read(descriptor, into: &buffer), count > 0 else { return nil }
        var bytes = buffer[0..<count]
        while bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// "thread 1234" or "thread 1234 "db"": a thread as error messages name it, with its name when it has one.
    package static func describe(_ threadID: pid_t) -> String {
        name(of: threadID).map { "thread \(threadID) \"\($0)\"" } ?? "thread \(threadID)"
    }
}
