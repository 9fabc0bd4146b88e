import CRunLoopShims
import Glibc
import RunLoopKitSystem

/// Descriptor sources (``DescriptorBackedSource``) in the loop's epoll set: their registrations (level-triggered, one
/// per descriptor number and open file, shared by every source of the loop watching that file, tagged so a stale
/// report is dropped), what the set is told for each (the union of what its sources watch), and parking while none
/// of the running mode's sources wants a report. Handling ready ones at step 9 of a pass is in
/// Loop+ReadyDescriptors.swift.
///
/// Every change of a source's entry in the epoll set, on any thread, is made holding the poller's registration lock
/// (``Poller/withRegistrations(_:)``), after checking that the entry is still the watch's: an `add` and an
/// `invalidate()` on other threads, and the loop's own changes, are ordered by it. Dispatch never takes it.
extension Loop {
    /// Registers the source in the epoll set on its first add to this loop, from the calling thread: adds its
    /// descriptor (`EPOLL_CTL_ADD`), or joins the registration a source of this loop already made for the same
    /// open file (the kernel answers `EEXIST`). Any thread.
    func register(_ source: DescriptorBackedSource) throws(LoopError) {
        let pollerID = ObjectIdentifier(poller)
        let outcome = poller.withRegistrations { table -> LoopError? in
            // Registered already (by another thread adding the same source at once, or to another mode).
            if let held = source.heldWatch, held.pollerID == pollerID { return nil }
            // Closed since the source was made: its number may name another file now, even this loop's own epoll
            // set (created by the `Loop.current` of this very call), which epoll would answer with a puzzling EINVAL.
            guard source.namesItsFile() else {
                return LoopError(
                    .badDescriptor, errno: EBADF,
                    message:
                        "descriptor \(source.watchedDescriptor) was closed after its source was made (the number may "
                        + "name another file now)")
            }
            let events = source.watchedEvents
            do throws(SystemError) {
                try table.add(source.watchedDescriptor, events: events.epollEvents, tag: source.epollTag)
            } catch {
                // In the set already: through a source of this loop watching the same file, join its registration
                // (the loop's thread widens what it reports when it applies the join).
                guard error.errno == EEXIST, let shared = table.watches[source.watchedDescriptor],
                    shared.identity == source.fileIdentity
                else { return LoopError(error, context: "watching descriptor \(source.watchedDescriptor)") }
                shared.users += 1
                source.heldWatch = shared
                source.dropFileReference()
                return nil
            }
            let watch = DescriptorWatch(
                descriptor: source.watchedDescriptor, tag: source.epollTag, identity: source.fileIdentity,
                pollerID: pollerID, events: events)
            // An entry for the number, yet the add succeeded: the kernel dropped that registration, because its file
            // was closed behind its sources' backs. They fail when the loop applies this source's join.
            table.watches.updateValue(watch, forKey: source.watchedDescriptor)?.removal = .superseded
            source.heldWatch = watch
            source.dropFileReference()
            return nil
        }
        guard let outcome else { throw terminatedLoopError }
        if let outcome { throw outcome }
    }

    /// Releases the source's hold on its registration, once: whichever comes first of `invalidate()` on any thread,
    /// the loop's detaching, or an `add` that finds its source invalidated right after registering it (the lock
    /// orders the registration and the invalidation). The last source of a registration takes the descriptor out
    /// of the epoll set, on the calling thread, while the descriptor is still open (the contract: invalidate, then
    /// close), so a number closed and reused later is never mistaken for it. Any thread.
    func removeRegistration(of source: DescriptorBackedSource) {
        let pollerID = ObjectIdentifier(poller)
        _ = poller.withRegistrations { table in
            guard let watch = source.heldWatch, watch.pollerID == pollerID else { return }
            source.heldWatch = nil
            watch.users -= 1
            guard watch.users == 0, watch.removal == nil else { return }
            watch.removal = .released
            table.watches[watch.descriptor] = nil
            table.remove(watch.descriptor)
        }
    }

    /// A source's first join on the loop's thread: enters it in the watch of its registration and tells the epoll
    /// set the new union. A registration that left the set meanwhile makes the source fail with the reason. A
    /// different watch recorded for the number was superseded (its file closed behind its sources' backs): its
    /// sources fail (``reportFailure(of:_:)``). Loop thread only.
    func enterWatch(_ source: DescriptorBackedSource) {
        let pollerID = ObjectIdentifier(poller)
        let held = poller.withRegistrations { _ -> (DescriptorWatch, DescriptorWatch.Removal?)? in
            guard let watch = source.heldWatch, watch.pollerID == pollerID else { return nil }
            return (watch, watch.removal)
        }
        guard let (watch, removal) = held ?? nil else { return }  // Released: invalidated meanwhile.
        if let removal {
            reportFailure(of: source, failure(of: watch, removal))
            return
        }
        // The previous entry's sources hold it until it is done with (``DescriptorTable/registered``).
        let previous = descriptorTable.registered.updateValue(.passUnretained(watch), forKey: watch.descriptor)?
            .takeUnretainedValue()
        watch.insert(source)
        source.watch = watch
        if let previous, previous !== watch {
            watchLeftTheSet(previous, failure(of: previous, .superseded))
            dropStaleEntry(under: watch.descriptor)  // The previous file's entry, if it outlived the number.
        }
        refresh(watch)
    }

    /// The reason a watch's sources are given when its registration left the set without them.
    func failure(of watch: DescriptorWatch, _ removal: DescriptorWatch.Removal) -> LoopError {
        switch removal {
        case .failed(let error):
            return error
        case .closed:
            return terminatedLoopError
        case .released, .superseded:
            let error = poller.withRegistrations { table in lostDescriptorError(watch.descriptor, table, detail: "") }
            return error ?? terminatedLoopError
        }
    }

    /// Tells the epoll set what `watch` is to report now: the union of what its valid sources watch or, while it
    /// is parked, of what those of them in the running mode watch (no longer parked once that is the whole
    /// union). Loop thread only.
    func refresh(_ watch: DescriptorWatch) {
        guard isRegistered(watch) else { return }
        var target = watch.wanted
        if watch.isParked {
            let claimed = runStack.mode.map { watch.claimed(inModeID: $0.id) } ?? []
            if claimed == target {
                watch.isParked = false
                descriptorTable.parked.removeAll { $0 === watch }
            } else {
                target = claimed
            }
        }
        setRegisteredEvents(watch, target)
    }

    /// Tells the epoll set to report `events` for `watch` (`[]`: a one-shot registration with no events), unless
    /// it was told that last. If the registration left the set meanwhile, or the kernel refuses the change, its
    /// sources fail (``watchLeftTheSet(_:_:)``). Loop thread only.
    func setRegisteredEvents(_ watch: DescriptorWatch, _ events: DescriptorBackedSource.Events) {
        guard events != watch.registeredEvents else { return }
        let removal = poller.withRegistrations { table -> DescriptorWatch.Removal? in
            if let removal = watch.removal { return removal }
            do throws(SystemError) {
                try table.modify(watch.descriptor, events: events.epollEvents, tag: watch.tag)
            } catch {
                // A registration left behind would report, level-triggered, to a loop that no longer handles it,
                // and spin it: out by number (the entry is this watch's, so the number is ours; a closed one
                // answers ENOENT, harmless).
                let removal = DescriptorWatch.Removal.failed(refusedChangeError(watch.descriptor, error, table))
                watch.removal = removal
                table.watches[watch.descriptor] = nil
                table.remove(watch.descriptor)
                return removal
            }
            watch.registeredEvents = events
            return nil
        }
        guard let removal = removal ?? .closed else { return }
        watchLeftTheSet(watch, failure(of: watch, removal))
        dropStaleEntry(under: watch.descriptor)  // Its file's entry, if it outlived the number.
    }

    /// What a refused change of a registration means for its sources: `EBADF`, `ENOENT`, `EPERM` say the
    /// descriptor was closed behind their backs (``LoopError/Code/badDescriptor``); anything else (`ENOMEM`) is
    /// ``LoopError/Code/systemCallFailed``.
    private func refusedChangeError(
        _ descriptor: CInt,
        _ error: SystemError,
        _ table: EpollRegistrations
    ) -> LoopError {
        let closed = error.errno == EBADF || error.errno == ENOENT || error.errno == EPERM
        guard closed else { return LoopError(error, context: "changing what descriptor \(descriptor) watches") }
        let lost = lostDescriptorError(descriptor, table, detail: " (\(error))")
        return LoopError(.badDescriptor, errno: error.errno, message: lost.message)
    }

    /// `watch`'s registration left the epoll set without its sources (they did not invalidate it): the loop
    /// forgets it, and each of its sources still valid is invalidated with `error` in
    /// ``DescriptorBackedSource/failure`` and gets one last handler call (``reportFailure(of:_:)``). Nothing of it is
    /// in the set, so it cannot spin the loop. Loop thread only.
    func watchLeftTheSet(_ watch: DescriptorWatch, _ error: LoopError) {
        if isRegistered(watch) { descriptorTable.registered[watch.descriptor] = nil }
        if watch.isParked {
            watch.isParked = false
            descriptorTable.parked.removeAll { $0 === watch }
        }
        for source in watch.removeAll() {
            source.watch = nil
            reportFailure(of: source, error)
        }
    }

    /// Records `error` as the source's ``DescriptorBackedSource/failure``, invalidates the source, and queues its last
    /// handler call (``DescriptorBackedSource/Events/invalid``), which ``handleReadyDescriptors(count:)`` makes in a
    /// pass of one of the modes it was in. Loop thread only.
    func reportFailure(of source: DescriptorBackedSource, _ error: LoopError) {
        guard source.recordFailure(error) else { return }
        var modeIDs: [Int] = []
        source.memberships.forEach { modeIDs.append($0.modeID) }
        source.invalidate()
        if !modeIDs.isEmpty { descriptorTable.failed.append((source, modeIDs)) }
    }

    /// Tells the epoll set what the source's registration is to report now that its ``DescriptorBackedSource/events``
    /// changed (the new union). Loop thread only.
    func applyWatchedEvents(_ source: DescriptorBackedSource) {
        guard source.isValid, let watch = source.watch else { return }  // Not joined yet: the join applies them.
        refresh(watch)
    }

    /// Takes an invalidated source out of its watch, releasing its hold on the registration if that was not done
    /// yet. The last source of a watch takes it out of the loop's table (the release took the descriptor out of
    /// the set); otherwise what the set reports narrows to what the others watch. Loop thread only.
    func unregister(_ source: DescriptorBackedSource) {
        removeRegistration(of: source)
        guard let watch = source.watch else { return }
        source.watch = nil
        watch.remove(source)
        guard isRegistered(watch) else { return }  // Left the set already.
        if watch.isEmpty {
            descriptorTable.registered[watch.descriptor] = nil
            if watch.isParked {
                watch.isParked = false
                descriptorTable.parked.removeAll { $0 === watch }
            }
        } else {
            refresh(watch)
        }
    }

    /// Narrows what the epoll set reports for a ready watch to what the running mode's sources of it watch
    /// (`claimed`; `[]`: a one-shot registration with no events), because it reported something none of them
    /// watches: level-triggered readiness would otherwise wake the loop again and again. It stays in the epoll set,
    /// so that if it is closed meanwhile the kernel drops it and ``unpark(_:)`` cannot mistake a new file with the
    /// same number for it. Loop thread only.
    func park(_ watch: DescriptorWatch, claimed: DescriptorBackedSource.Events) {
        guard claimed != watch.registeredEvents else { return }  // Nothing more to narrow (a one-shot that fired).
        if !watch.isParked {
            watch.isParked = true
            descriptorTable.parked.append(watch)
        }
        setRegisteredEvents(watch, claimed)
    }

    /// Restores everything a parked watch's sources watch, once a mode one of them is in runs; one whose descriptor
    /// was closed meanwhile (its number perhaps reused) fails its sources. The caller took it out of the parked
    /// list. Loop thread only.
    func unpark(_ watch: DescriptorWatch) {
        watch.isParked = false
        setRegisteredEvents(watch, watch.wanted)
    }

    /// Unparks the parked watches that have a source in `state` (a run of it begins or resumes).
    func resumeParkedWatches(in state: ModeState) {
        var index = 0
        while index < descriptorTable.parked.count {
            let watch = descriptorTable.parked[index]
            if watch.hasSource(inModeID: state.id) {
                descriptorTable.parked.remove(at: index)
                unpark(watch)
            } else {
                index += 1
            }
        }
    }

    /// Whether `watch` is the loop's registration of its descriptor number (not one that left the set). Loop thread
    /// only.
    func isRegistered(_ watch: DescriptorWatch) -> Bool {
        descriptorTable.registered[watch.descriptor]?.toOpaque() == Unmanaged.passUnretained(watch).toOpaque()
    }

    /// Forgets every registration when the loop's thread exits (closing the epoll set drops them from the kernel):
    /// each source may join another loop, where it is registered afresh. Loop thread only, in the teardown.
    func forgetRegistrations() {
        for entry in descriptorTable.registered.values {
            let watch = entry.takeUnretainedValue()  // Held by its sources until they are taken out.
            watch.isParked = false
            for source in watch.removeAll() { source.forgetRegistration(in: poller.epoll) }
        }
        for watch in descriptorTable.parked { watch.isParked = false }
        descriptorTable.registered.removeAll()
        descriptorTable.parked.removeAll()
    }
}
