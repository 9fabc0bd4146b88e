import Glibc

extension LoopThread {
    /// The most bytes of a thread name the kernel keeps (16 with the terminating zero).
    static let maximumNameLength = 15

    /// The calling thread's kernel thread id, read from the `/proc/thread-self` link (`<pid>/task/<tid>`).
    ///
    /// Swift's Glibc module exposes neither `gettid(2)` nor the variadic `syscall(2)`; the link says the same.
    /// Returns 0 when `/proc` is not mounted.
    static func currentThreadID() -> pid_t {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard count > 0 else { return 0 }
        let bytes = buffer[0..<count].map { UInt8(bitPattern: $0) }
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return 0 }
        return pid_t(String(decoding: bytes[(slash + 1)...], as: UTF8.self)) ?? 0
    }

    /// `name` cut to at most 15 UTF-8 bytes, at a character boundary: what the kernel can keep.
    static func truncatedThreadName(_ name: String) -> String {
        var result = ""
        var length = 0
        for scalar in name.unicodeScalars {
            let size = UTF8.width(scalar)
            guard length + size <= maximumNameLength else { break }
            result.unicodeScalars.append(scalar)
            length += size
        }
        return result
    }

    /// Names the calling thread (shown by `top -H`, `ps -L`, debuggers), cut to 15 bytes.
    ///
    /// Writes `/proc/thread-self/comm`, which is what `pthread_setname_np(3)` does (Swift's Glibc module does not
    /// expose that GNU extension). Does nothing when `/proc` is not mounted.
    static func setCurrentThreadName(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var bytes = Array(truncatedThreadName(name).utf8)
        _ = write(descriptor, &bytes, bytes.count)
    }
}
