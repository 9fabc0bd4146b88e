import RunLoopKitSystem

/// A plain POSIX thread for the scenarios that make their own second thread (as Apple code does with NSThread).
typealias DemoThread = JoinableThread

extension JoinableThread {
    /// Starts `body` on a new thread; a demo that cannot start one has nothing to show, so it stops with the reason.
    convenience init(_ body: @escaping @Sendable () -> Void) {
        do {
            try self.init(name: nil, body)
        } catch {
            fatalError("loop-demo: \(error)")
        }
    }
}
