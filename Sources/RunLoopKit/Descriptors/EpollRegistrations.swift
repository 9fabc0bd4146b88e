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
    /// The loop's own descriptors in the set (its wake-up eventfd and timerfd, Dispatch's main-queue eventfd): what a
    /// rebuilt set starts with (``rebuild()``).
    var own: [OwnEntry] = []
    /// The host's set (``Loop/pollDescriptor``): an epoll set holding ``epoll``, made when a host first asks for it;
    /// -1 until then. A host keeps it (in an epoll set of its own, say), so it stays the same file for the loop's
    /// life, while ``rebuild()`` replaces the file ``epoll`` names.
    var hostSet: CInt = -1
    /// The number under which ``hostSet`` holds the loop's set (epoll keys an entry by file and number): ``epoll``,
    /// or, after a rebuild whose re-add failed, a descriptor of the loop's set kept open for that entry. -1 without
    /// a host's set.
    var hostEntry: CInt = -1

    /// One of the loop's own descriptors in the set, what it reports and its tag.
    struct OwnEntry {
        let descriptor: CInt
        let events: Epoll.Events
        let tag: UInt64
    }

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

    /// Takes one of the loop's own descriptors out of the set and out of ``own``, so a rebuilt set does not take it
    /// back (``rebuild()``).
    mutating func removeOwn(_ descriptor: CInt) {
        remove(descriptor)
        own.removeAll { $0.descriptor == descriptor }
    }

    // MARK: Entries the loop cannot name (error time only)

    /// Whether the set holds, under the number `descriptor`, an entry for a file that number does not name now (or
    /// names nothing): the entry of a file replaced behind its sources' backs (`dup2`, or closed and its number
    /// reused) while another descriptor or process keeps it open. The kernel drops an entry only when its file's
    /// last descriptor closes, and `epoll_ctl` reaches an entry only through the file its number names now, so no
    /// `EPOLL_CTL_DEL` can remove it; level-triggered, it would wake the loop for good (``rebuild()`` drops it).
    /// Costs one `kcmp(2)` when the set holds nothing under the number (as after a removal); `false` where the
    /// kernel will not say.
    func holdsStaleEntry(under descriptor: CInt) -> Bool {
        var index = 0
        while true {
            // Asked with the set itself, which never watches itself: only whether entry `index` exists.
            guard (try? FileDescriptorCalls.compare(epoll, withEntry: index, of: descriptor, in: epoll)) == .otherFile
            else { return false }
            if (try? FileDescriptorCalls.compare(descriptor, withEntry: index, of: descriptor, in: epoll)) != .sameFile
            {
                return true
            }
            index += 1
        }
    }

    /// Whether one of the set's entries under the number `descriptor` is for the file that number names now.
    private func holdsEntry(forFileOf descriptor: CInt) -> Bool {
        var index = 0
        while true {
            switch try? FileDescriptorCalls.compare(descriptor, withEntry: index, of: descriptor, in: epoll) {
            case .sameFile: return true
            case .otherFile: index += 1
            default: return false
            }
        }
    }

    /// Makes the host's set (``hostSet``) holding the loop's set, level-triggered, unless it exists already; answers
    /// it. Holding the lock.
    ///
    /// - Throws: What `epoll_create1` or `epoll_ctl(EPOLL_CTL_ADD)` failed with (`EMFILE`, `ENOMEM`); nothing is
    ///   left open then.
    mutating func makeHostSet() throws(SystemError) -> CInt {
        if hostSet >= 0 { return hostSet }
        let host = try Epoll.create()
        do throws(SystemError) {
            try Epoll.add(host, epoll, events: .input, data: 0)
        } catch {
            FileDescriptorCalls.close(host)
            throw error
        }
        hostSet = host
        hostEntry = epoll
        return host
    }

    /// Drops every entry the loop cannot name (``holdsStaleEntry(under:)``) by moving to a fresh epoll set under the
    /// same number: the new set gets the loop's own descriptors and each watch's entry (what it was last told, and
    /// its tag), then takes the old set's number (`dup3`), which closes the old set and every entry in it. A watch
    /// whose number no longer names the file it was made for is left out of the new set and of ``watches``; the
    /// caller fails its sources. Answers those watches.
    ///
    /// Only the entries change: the set keeps its number, and every report of a kept entry keeps its tag. A host's
    /// set (``hostSet``) is moved to the new set before the old one leaves it, so a host never misses the loop's work
    /// and never hears the old set (which a forked child may keep open, stale entry and all). Loop thread, holding
    /// the lock.
    ///
    /// - Throws: What creating the new set or an `EPOLL_CTL_ADD` to it (or of it to the host's set) failed with
    ///   (`EMFILE`, `ENOMEM`), or `dup3`'s `EBUSY`: the old set is then left as it was, in the host's set.
    mutating func rebuild() throws(SystemError) -> [DescriptorWatch] {
        let fresh = try Epoll.create()
        var leftOut: [DescriptorWatch] = []
        do throws(SystemError) {
            for entry in own { try Epoll.add(fresh, entry.descriptor, events: entry.events, data: entry.tag) }
            for watch in watches.values {
                guard holdsEntry(forFileOf: watch.descriptor) else {
                    leftOut.append(watch)
                    continue
                }
                try Epoll.add(fresh, watch.descriptor, events: watch.registeredEvents.epollEvents, data: watch.tag)
            }
            if hostSet >= 0 { try Epoll.add(hostSet, fresh, events: .input, data: 0) }
        } catch {
            FileDescriptorCalls.close(fresh)
            throw error
        }
        if hostSet >= 0 { leaveHostSet() }
        do throws(SystemError) {
            try FileDescriptorCalls.duplicate(fresh, onto: epoll)
        } catch {
            if hostSet >= 0 { rejoinHostSet(leaving: fresh) }
            FileDescriptorCalls.close(fresh)
            throw error
        }
        if hostSet >= 0 {
            rejoinHostSet(leaving: fresh, keepingOnFailure: true)
            if hostEntry != fresh { FileDescriptorCalls.close(fresh) }
        } else {
            FileDescriptorCalls.close(fresh)
        }
        for watch in leftOut { watches[watch.descriptor] = nil }
        return leftOut
    }

    /// Takes the loop's set out of the host's set, under the number it was added with (a spare number is closed). The
    /// old set must leave before `dup3` replaces it: afterwards no number names it, and a forked child holding it
    /// would keep it in the host's set for good.
    private mutating func leaveHostSet() {
        try? Epoll.remove(hostSet, hostEntry)
        if hostEntry != epoll { FileDescriptorCalls.close(hostEntry) }
        hostEntry = -1
    }

    /// Puts the set ``epoll`` names in the host's set, then takes `temporary` (added to stand in meanwhile) out. If
    /// the add fails and `keepingOnFailure`, `temporary` stays, and open: the host's set holds the loop's set under
    /// its number. Otherwise a failed add traps: the host would never hear the loop again, and nobody can be told.
    private mutating func rejoinHostSet(leaving temporary: CInt, keepingOnFailure: Bool = false) {
        do throws(SystemError) {
            try Epoll.add(hostSet, epoll, events: .input, data: 0)
        } catch {
            guard keepingOnFailure else {
                trap("RunLoopKit: the host's epoll set (pollDescriptor) cannot hold the loop's set again: \(error)")
            }
            hostEntry = temporary
            return
        }
        hostEntry = epoll
        try? Epoll.remove(hostSet, temporary)
    }
}
