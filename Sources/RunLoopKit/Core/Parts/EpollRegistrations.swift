import Glibc
import RunLoopKitSystem

/// The descriptor sources' entries of a loop's epoll set: which ``DescriptorWatch`` holds each descriptor number, and
/// the `epoll_ctl` calls that change them.
///
/// Guarded by the poller's lock (``Poller/withRegistrations(_:)``), which every change of a source's entry holds,
/// on whatever thread makes it (an `add` and an `invalidate()` on any thread, the loop's own changes of what is
/// watched): an entry is added, changed and deleted only by the holder, after checking in ``watches`` that the
/// number is still the watch's. Invariant while open: a watch is in ``watches`` exactly while its
/// ``DescriptorWatch/removal`` is `nil`.
struct EpollRegistrations {
    /// The epoll set.
    let epoll: CInt
    /// Whether the set is still open; once closed, the loop's thread exited and no entry changes any more.
    var isOpen = true
    /// The watch holding each descriptor number's entry.
    var watches: [CInt: DescriptorWatch] = [:]

    /// Adds `descriptor`, level-triggered, tagged with `tag`.
    ///
    /// - Throws: What `epoll_ctl(EPOLL_CTL_ADD)` failed with (`EEXIST`: the open file is in the set already).
    func add(_ descriptor: CInt, events: Epoll.Events, tag: UInt64) throws(SystemError) {
        try Epoll.add(epoll, descriptor, events: events, data: tag)
    }

    /// Changes what a descriptor in the set reports, and its tag.
    ///
    /// - Throws: What `epoll_ctl(EPOLL_CTL_MOD)` failed with: `EBADF`, `ENOENT` or `EPERM` when the descriptor left
    ///   the set meanwhile (it was closed, and its number may now name another file); anything else leaves it in the
    ///   set (see ``Loop/setRegisteredEvents(_:_:)``).
    func modify(_ descriptor: CInt, events: Epoll.Events, tag: UInt64) throws(SystemError) {
        try Epoll.modify(epoll, descriptor, events: events, data: tag)
    }

    /// Removes `descriptor` from the set; one the caller already closed is not an error (the kernel dropped it).
    func remove(_ descriptor: CInt) {
        do throws(SystemError) {
            try Epoll.remove(epoll, descriptor)
        } catch let error where error.errno == EBADF || error.errno == ENOENT || error.errno == EPERM {
            // Closed before it was removed: the kernel already dropped it (EPERM: the number now names a file
            // epoll cannot watch, such as a regular file, so it cannot be in the set).
            return
        } catch {
            trap("RunLoopKit: epoll_ctl(EPOLL_CTL_DEL) on the loop's own set failed: \(error)")
        }
    }
}
