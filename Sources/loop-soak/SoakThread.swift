import Glibc

/// A plain POSIX thread of the soak's own (drivers, load, the poster racing the churn), named for `top -H`.
///
/// Threading: create and join from the same thread; ``join()`` once.
final class SoakThread: @unchecked Sendable {  // Unchecked: `thread` is written once in init, then only joined.
    private var thread = pthread_t()

    private final class Body {
        let name: String
        let run: () -> Void

        init(name: String, run: @escaping () -> Void) {
            self.name = name
            self.run = run
        }
    }

    /// Starts `body` on a new thread called `name` (the kernel keeps its first 15 bytes).
    init(name: String, _ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        let status = pthread_create(
            &thread, nil,
            { pointer in
                let body = Unmanaged<Body>.fromOpaque(pointer!).takeRetainedValue()
                SoakThread.nameCurrentThread(body.name)
                body.run()
                return nil
            }, context)
        guard status == 0 else {
            fatalError("loop-soak: pthread_create failed for \(name) (\(status))")
        }
    }

    /// Waits for the thread to end.
    func join() {
        pthread_join(thread, nil)
    }

    /// Names the calling thread, as `pthread_setname_np` does: by writing `/proc/thread-self/comm`.
    static func nameCurrentThread(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
    }
}
