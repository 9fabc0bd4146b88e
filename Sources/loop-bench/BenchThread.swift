import RunLoopKitSystem

/// A plain POSIX thread the harness creates (never inside a timed section) and joins.
typealias BenchThread = JoinableThread

extension JoinableThread {
    /// Starts `body` on a new thread; a benchmark that cannot start one cannot measure, so it stops with the reason.
    convenience init(_ body: @escaping @Sendable () -> Void) {
        do {
            try self.init(name: nil, body)
        } catch {
            fatalError("loop-bench: \(error)")
        }
    }
}
