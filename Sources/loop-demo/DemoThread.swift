import Glibc

/// A plain POSIX thread for the scenarios that make their own second thread (as Apple code does with NSThread).
final class DemoThread: @unchecked Sendable {  // Unchecked: `thread` is written once in init, then only joined.
    private var thread = pthread_t()

    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// Starts `body` on a new thread.
    init(_ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        let status = pthread_create(
            &thread, nil,
            { pointer in
                Unmanaged<Body>.fromOpaque(pointer!).takeRetainedValue().run()
                return nil
            }, context)
        precondition(status == 0, "loop-demo: pthread_create failed (\(status))")
    }

    /// Waits for the thread to end.
    func join() {
        pthread_join(thread, nil)
    }
}
