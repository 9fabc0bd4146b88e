import RunLoopKitSystem

/// A plain POSIX thread of the soak's own (drivers, load, the poster racing the churn), named for `top -H`.
typealias SoakThread = JoinableThread

extension JoinableThread {
    /// Starts `body` on a new thread called `name`; a soak that cannot start its threads cannot run, so it stops with
    /// the reason.
    convenience init(name: String, _ body: @escaping @Sendable () -> Void) {
        do {
            try self.init(name: Optional(name), body)
        } catch {
            fatalError("loop-soak: starting thread \(name) failed: \(error)")
        }
    }
}
