import RunLoopKit

/// The code only the Foundation bridge throws. Its other failures are the core's codes: `invalidMode` for
/// `Loop.Mode.common`, `alreadyBridged` for a second bridge, `loopTerminated` when the loop's thread has exited,
/// and the core's own error when the loop refuses the bridge's items or a system call fails.
extension LoopError.Code {
    /// Only `Loop.main` can be bridged from another thread than its own: Foundation gives no other thread's
    /// `RunLoop`. Thrown by `Loop.bridgeToFoundation(mode:)` called off a loop's thread.
    public static let notOnLoopThread = Self("notOnLoopThread")
}
