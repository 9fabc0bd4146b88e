extension Loop {
    /// Makes an observer of `activities` and adds it to every mode of `modes`: how the helpers that work at a phase
    /// of the loop's passes (``CommitBeforeSleep``, ``PassWorkQueue``) set themselves up. If an add fails, the
    /// observer is invalidated (it leaves the modes it joined) and the error thrown. Any thread.
    func addHelperObserver(
        activities: Activity,
        order: Int,
        to modes: [Mode],
        handler: @escaping @Sendable (LoopObserver, Activity) -> Void
    ) throws(LoopError) -> LoopObserver {
        let observer = LoopObserver(activities: activities, order: order, handler: handler)
        do {
            for mode in modes { try add(observer, to: mode) }
        } catch {
            observer.invalidate()
            throw error
        }
        return observer
    }
}
