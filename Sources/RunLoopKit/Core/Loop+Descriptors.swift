import CRunLoopShims
import Glibc

/// Descriptor sources (``FileDescriptorSource``): their registration in the loop's epoll set (level-triggered,
/// tagged with the source's generation so a stale report is dropped), what they watch, parking while none of their
/// modes runs, and handling ready ones at step 9 of a pass.
extension Loop {
    /// Puts the source's descriptor in the epoll set, from the calling thread, once per source.
    func register(_ source: FileDescriptorSource) throws(LoopError) {
        // Closed since the source was made: its number may name another file now, even this loop's own epoll set
        // (created by the `Loop.current` of this very call), which epoll would answer with a puzzling EINVAL.
        guard FileDescriptorCalls.identity(of: source.descriptor) == source.fileIdentity else {
            throw LoopError(
                .badDescriptor, errno: EBADF,
                message: "descriptor \(source.descriptor) was closed after its source was made (the number may name "
                    + "another file now)")
        }
        // Several threads adding the same source at once: the loser of the race sees EEXIST from its own
        // registration only if the winner already registered; treat that as done.
        let events = source.events
        do {
            try poller.register(source.descriptor, events: events.epollEvents, tag: source.epollTag)
        } catch {
            let lostTheRace =
                error.code == .descriptorAlreadyRegistered && source.isRegistered.load(ordering: .acquiring)
            guard lostTheRace else { throw error }
            return
        }
        source.registeredEvents = events
        source.isRegistered.store(true, ordering: .sequentiallyConsistent)
    }

    /// Records `source` as the owner of its descriptor number. An earlier source of the same number lost its
    /// descriptor (closed without invalidating): it never sees the new descriptor's events, and its handler is told
    /// (``reportFailure(of:_:)``).
    func replaceRegistration(with source: FileDescriptorSource) {
        if let previous = descriptorTable.registered[source.descriptor], previous !== source {
            descriptorTable.registered[source.descriptor] = nil
            descriptorTable.parked.removeAll { $0 === previous }
            previous.isParked = false
            previous.isUnregistered.store(true, ordering: .sequentiallyConsistent)  // The kernel dropped it.
            reportFailure(
                of: previous,
                LoopError(
                    .badDescriptor, errno: EBADF,
                    message: "descriptor \(previous.descriptor) was closed while its source watched it, and its "
                        + "number now names another file"))
        }
        descriptorTable.registered[source.descriptor] = source
    }

    /// Records `error` as the source's ``FileDescriptorSource/failure``, invalidates the source (its registration
    /// is already gone), and queues its last handler call (``FileDescriptorSource/Events/invalid``), which
    /// ``handleReadyDescriptors(count:)`` makes in a pass of one of the modes it was in. Loop thread only.
    func reportFailure(of source: FileDescriptorSource, _ error: LoopError) {
        guard source.recordFailure(error) else { return }
        var modeIDs: [Int] = []
        source.memberships.forEach { modeIDs.append($0.modeID) }
        source.invalidate()
        if !modeIDs.isEmpty { descriptorTable.failed.append((source, modeIDs)) }
    }

    /// Tells the epoll set what `source` watches now (``FileDescriptorSource/events``), unless its reports are
    /// suspended (parked: resuming uses the new events) or it is not registered here. A descriptor closed meanwhile
    /// invalidates its source, as when unparking. Loop thread only.
    func applyWatchedEvents(_ source: FileDescriptorSource) {
        guard source.isValid, descriptorTable.registered[source.descriptor] === source, !source.isParked else { return }
        let events = source.events
        guard events != source.registeredEvents else { return }
        source.registeredEvents = events
        do {
            try poller.resume(source.descriptor, events: events.epollEvents, tag: source.epollTag)
        } catch {
            dropRegistration(of: source, after: error)
        }
    }

    /// A change to what the epoll set reports for `source` failed: the source cannot be watched as its owner asked,
    /// so it is invalidated with the reason in ``FileDescriptorSource/failure``, and nothing of it stays in the set.
    /// `EBADF`, `ENOENT`, `EPERM` say the descriptor was closed behind the source's back (``LoopError/Code/badDescriptor``);
    /// anything else (`ENOMEM`) is ``LoopError/Code/systemCallFailed``. Either way the registration is taken out by
    /// number (a closed one answers `ENOENT`, harmless), unless another source of this loop owns that number now:
    /// then the kernel already dropped this one's, and the new file's is not touched. A registration left behind
    /// would report, level-triggered, to a loop that no longer handles it, and spin it. Loop thread only.
    func dropRegistration(of source: FileDescriptorSource, after error: SystemError) {
        let current = descriptorTable.registered[source.descriptor]
        if current === source { descriptorTable.registered[source.descriptor] = nil }
        descriptorTable.parked.removeAll { $0 === source }
        source.isParked = false
        if current == nil || current === source {
            removeRegistration(of: source)
        } else {
            source.isUnregistered.store(true, ordering: .sequentiallyConsistent)
        }
        let closed = error.errno == EBADF || error.errno == ENOENT || error.errno == EPERM
        let failure =
            closed
            ? LoopError(
                .badDescriptor, errno: error.errno,
                message: "descriptor \(source.descriptor) was closed while its source watched it (\(error))")
            : LoopError(error, context: "changing what descriptor \(source.descriptor) watches")
        reportFailure(of: source, failure)
    }

    /// Forgets the source's registration for good, taking its descriptor out of the epoll set if that was not
    /// done yet. Loop thread only.
    func unregister(_ source: FileDescriptorSource) {
        descriptorTable.parked.removeAll { $0 === source }
        guard descriptorTable.registered[source.descriptor] === source else { return }
        descriptorTable.registered[source.descriptor] = nil
        removeRegistration(of: source)  // A parked descriptor is still in the set, suspended.
        source.isParked = false
    }

    /// Takes the source's descriptor out of the epoll set, once: whichever comes first of the loop's unregister,
    /// `invalidate()` on any thread, or an `add` that finds its source invalidated right after registering it (with
    /// sequentially consistent flags, the registration and the invalidation always see each other). Any thread.
    func removeRegistration(of source: FileDescriptorSource) {
        guard source.isRegistered.load(ordering: .sequentiallyConsistent),
            !source.isUnregistered.exchange(true, ordering: .sequentiallyConsistent)
        else { return }
        poller.unregister(source.descriptor)
    }

    /// Suspends a ready descriptor's reports while none of its modes runs (level-triggered readiness would
    /// otherwise wake the loop again and again). It stays in the epoll set, so that if it is closed meanwhile the
    /// kernel drops it and ``unpark(_:)`` cannot mistake a new file with the same number for it. Loop thread only.
    func park(_ source: FileDescriptorSource) {
        guard !source.isParked else { return }
        do {
            try poller.suspend(source.descriptor, tag: source.epollTag)
        } catch {
            dropRegistration(of: source, after: error)
            return
        }
        source.isParked = true
        descriptorTable.parked.append(source)
    }

    /// Resumes a parked descriptor's reports; one that was closed meanwhile (its number perhaps reused) invalidates
    /// its source.
    func unpark(_ source: FileDescriptorSource) {
        source.isParked = false
        source.registeredEvents = source.events
        do {
            try poller.resume(source.descriptor, events: source.registeredEvents.epollEvents, tag: source.epollTag)
        } catch {
            dropRegistration(of: source, after: error)
        }
    }

    /// Step 9b: calls the handlers of the running mode's ready descriptor sources, lower order first, each with
    /// what it watches at that moment; answers whether any was handled. Reports of a descriptor whose registration
    /// was replaced or removed are dropped; a source ready while none of its modes runs is taken out of the epoll
    /// set until one does. Sources whose descriptor failed get their last call first.
    func handleReadyDescriptors(count: Int) -> Bool {
        guard let state = runStack.mode else { return false }
        var handled = descriptorTable.failed.isEmpty ? false : tellFailedSources(in: state)
        guard count > 0 else { return handled }
        let buffer = scratch.eventBuffers[runStack.depth]  // Made by the wait that reported the events.
        var ready = scratch.readyDescriptors.take()
        for index in 0..<count {
            let tag = buffer[index].data.u64
            guard tag > Poller.lastLoopTag else { continue }
            let descriptor = CInt(bitPattern: UInt32(truncatingIfNeeded: tag))
            guard let source = descriptorTable.registered[descriptor], source.epollTag == tag, source.isValid else {
                continue
            }
            if source.isIn(modeID: state.id) {
                let events = FileDescriptorSource.Events(epoll: Epoll.Events(rawValue: buffer[index].events))
                let position = ready.firstIndex { $0.0.order > source.order } ?? ready.endIndex
                ready.insert((source, events), at: position)
            } else {
                park(source)
            }
        }
        for (source, events) in ready where source.isValid && source.isIn(modeID: state.id) {
            // Masked now, not when the report was read: an earlier handler of this pass may have changed `events`.
            let reported = events.reported(by: source.events)
            guard !reported.isEmpty else { continue }
            source.handler(source, reported)
            handled = true
        }
        scratch.readyDescriptors.give(&ready)
        return handled
    }

    /// Calls, with ``FileDescriptorSource/Events/invalid``, the handlers of the failed sources that were in
    /// `state`; the others wait for one of their modes. Answers whether any was called.
    private func tellFailedSources(in state: ModeState) -> Bool {
        var told = false
        var index = 0
        while index < descriptorTable.failed.count {
            guard descriptorTable.failed[index].modeIDs.contains(state.id) else {
                index += 1
                continue
            }
            let source = descriptorTable.failed.remove(at: index).source
            source.handler(source, .invalid)
            told = true
        }
        return told
    }

    /// Whether a failed source waits for its last call in a run of `state`.
    func hasFailedSource(in state: ModeState) -> Bool {
        !descriptorTable.failed.isEmpty && descriptorTable.failed.contains { $0.modeIDs.contains(state.id) }
    }
}
