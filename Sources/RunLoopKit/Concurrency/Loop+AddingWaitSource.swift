extension Loop {
    /// Adds a descriptor source an async wait just created, on the loop's thread (now when called there, else
    /// before the loop's next pass), then calls `completion` there with `nil` or the error. Any thread.
    ///
    /// Why on the loop's thread, where `add` would register the descriptor on the calling thread:
    /// - A source added from another thread and invalidated before the loop applied the add (a wait cancelled at
    ///   once) would stay in the epoll set: the loop skips the add of an invalid item and so never learns of the
    ///   registration its removal should undo. Added on the loop's thread, add and registration are one step, and
    ///   a later invalidation always finds the registration.
    /// - A source invalidated from another thread leaves the epoll set only at the loop's next pass, so a wait
    ///   following a cancelled wait on the same descriptor would see `EEXIST` for a moment. Behind that removal
    ///   in the loop's inbox (which keeps order), the add fails only if another live source watches the
    ///   descriptor.
    ///
    /// If the loop's thread has exited, the change is dropped with `source`; the wait learns it from the source's
    /// ``DropSignal`` or from its own ``Loop/isTerminated`` check.
    func addWaitSource(
        _ source: FileDescriptorSource,
        to mode: Mode,
        completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        onLoopThread { [self] in
            do {
                try add(source, to: mode)
                completion(nil)
            } catch {
                completion(error)
            }
        }
    }
}
