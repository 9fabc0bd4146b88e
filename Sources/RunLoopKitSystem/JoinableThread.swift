import Glibc

/// A plain POSIX thread, optionally named, that its creator joins: what the package's executables and tests start
/// their own threads with (`LoopThread` is the library's). Built on ``ThreadCalls``, so a thread is started and
/// named one way in the whole package.
///
/// Threading: create and ``join()`` from the same thread; join once.
package final class JoinableThread: @unchecked Sendable {  // Unchecked: `thread` is written once, then only joined.
    private var thread = pthread_t()

    private final class Body {
        let name: String?
        let run: () -> Void

        init(name: String?, run: @escaping () -> Void) {
            self.name = name
            self.run = run
        }
    }

    /// Starts `body` on a new thread, called `name` when given (the kernel keeps its first 15 bytes). A tool or test
    /// that cannot start its thread cannot go on: when `pthread_create` fails (`EAGAIN`: out of threads), this traps
    /// with the reason.
    package init(name: String? = nil, _ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        do {
            thread = try ThreadCalls.start(
                { pointer in
                    let body = Unmanaged<Body>.fromOpaque(pointer!).takeRetainedValue()
                    if let name = body.name { try? ThreadCalls.setCurrentName(name) }
                    body.run()
                    return nil
                }, with: context)
        } catch {
            trap("starting thread \(name ?? "(unnamed)") failed: \(error)")
        }
    }

    /// Waits for the thread to end.
    ///
    /// The corresponding C call is `pthread_join(3)` (``ThreadCalls/join(_:)``).
    package func join() {
        try? ThreadCalls.join(thread)
    }
}
