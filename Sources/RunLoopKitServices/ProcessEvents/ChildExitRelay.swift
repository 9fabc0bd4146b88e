import Glibc
import RunLoopKit
import RunLoopKitSystem

/// The link from a child-exit source's pidfd watcher to the source: owns the pidfd and closes it when freed.
///
/// Held only by the watching ``FileDescriptorSource``'s handler, so the pidfd lives exactly as long as the loop (or
/// the unscheduled ``ChildExitSource``) keeps that descriptor source, and is closed only after the loop has taken the
/// descriptor out of its epoll set: its number can never be reused under a registration that is still live.
///
/// Threading: ``attach(_:)`` and ``detach()`` from any thread (under the source's lock); ``descriptorReady()`` on
/// the loop's thread.
final class ChildExitRelay: Sendable {
    /// The pidfd; closed in `deinit`.
    let pidfd: CInt
    let handler: @Sendable (ChildExitSource, ChildExitStatus) -> Void
    /// The source, strongly while it is (being) scheduled, so a loop keeps a source its creator let go of.
    private let source = Locked<ChildExitSource?>(nil)

    init(pidfd: CInt, handler: @escaping @Sendable (ChildExitSource, ChildExitStatus) -> Void) {
        self.pidfd = pidfd
        self.handler = handler
    }

    deinit {
        FileDescriptorCalls.close(pidfd)
    }

    /// Links the source, when an add begins.
    func attach(_ source: ChildExitSource) {
        self.source.withLock { $0 = source }
    }

    /// Unlinks the source, when every add failed.
    func detach() {
        source.withLock { $0 = nil }
    }

    /// The pidfd is readable. Loop thread only.
    func descriptorReady() {
        guard let source = source.withLock({ $0 }) else { return }
        source.childExited(pidfd: pidfd, handler: handler)
    }
}
