import Glibc
import RunLoopKitSystem

/// Step 9b of a pass: the handlers of ready descriptor sources, called with what each watches, reports for a stale
/// registration dropped, a registration no running source wants parked, and failed sources told last. Loop thread
/// only; registrations themselves are in Loop+DescriptorRegistration.swift.
extension Loop {
    /// Step 9b: calls the handlers of the running mode's ready descriptor sources, lower order first, each with
    /// what it watches at that moment; answers whether any was handled. A report goes to every source of its
    /// registration that is in the running mode. Reports of a registration that was replaced or removed are
    /// dropped; one that tells something no source in the running mode watches narrows the registration to what
    /// they watch (parks it) until another of its modes runs. Sources whose descriptor failed get their last call
    /// first.
    func handleReadyDescriptors(count: Int) -> Bool {
        guard let state = runStack.mode else { return false }
        var handled = descriptorTable.failed.isEmpty ? false : tellFailedSources(in: state)
        guard count > 0 else { return handled }
        let buffer = scratch.eventBuffers[runStack.depth]  // Made by the wait that reported the events.
        // A wake-up or the timerfd alone, as after most sleeps: no source to look up, no list to take.
        guard let firstSourceEvent = (0..<count).first(where: { buffer[$0].data.u64 > Poller.lastLoopTag }) else {
            return handled
        }
        descriptorTable.reportedSinceHostPass = true
        var ready = scratch.readyDescriptors.take()
        var orphanReport: CInt?
        for index in firstSourceEvent..<count {
            let tag = buffer[index].data.u64
            guard tag > Poller.lastLoopTag else { continue }
            let descriptor = CInt(bitPattern: UInt32(truncatingIfNeeded: tag))
            guard let entry = descriptorTable.registered[descriptor] else {
                orphanReport = descriptor  // No registration of the loop's: looked into after the handlers.
                continue
            }
            let events = DescriptorBackedSource.Events(epoll: Epoll.Events(rawValue: buffer[index].events))
            // Borrowed, not retained: its sources hold it, and none leaves before `park` (which takes it strong).
            let unclaimed = entry._withUnsafeGuaranteedRef { watch -> DescriptorBackedSource.Events? in
                guard watch.tag == tag else {
                    orphanReport = descriptor
                    return nil
                }
                // What the running mode's sources of it watch; most registrations have one source, handled inline.
                var claimed: DescriptorBackedSource.Events = []
                if let source = watch.first, source.isValid, source.isIn(modeID: state.id) {
                    claimed = source.watchedEvents
                    queue(source, events, in: &ready)
                }
                if watch.count > 1 { claimed.formUnion(queueOthers(of: watch, events, in: state, into: &ready)) }
                let handled = !claimed.isEmpty && claimed.isSuperset(of: events.intersection(.watchable))
                return handled ? nil : claimed
            }
            if let claimed = unclaimed { park(entry.takeUnretainedValue(), claimed: claimed) }
        }
        for (source, events) in ready where source.isValid && source.isIn(modeID: state.id) {
            // Masked now, not when the report was read: an earlier handler of this pass may have changed `events`.
            let reported = events.reported(by: source.watchedEvents)
            guard !reported.isEmpty else { continue }
            if source.appliedRateLimiter != nil && rateLimitHoldsBack(source, events, in: state) { continue }
            MetricsKeeper.bump(metricsKeeper.descriptorReports)
            recordSinceEventsReturned(.descriptor)
            let token = recordCalloutStart(.descriptor, at: source.callSite)
            source.callout(source, reported)
            recordCalloutEnd(token)
            handled = true
        }
        scratch.readyDescriptors.give(&ready)
        if let orphanReport { dropStaleEntry(under: orphanReport) }
        return handled
    }

    /// A report no registration of the loop claims: most are the last of a registration removed after the wait
    /// read them, but one may come from an entry the loop cannot name (``EpollRegistrations/holdsStaleEntry(under:)``),
    /// which, level-triggered, would wake the loop for good. If the set holds one under `descriptor`, the loop moves to
    /// a rebuilt set without it (``EpollRegistrations/rebuild()``); sources whose number no longer names their file
    /// fail with what happened. Should the rebuild fail (`EMFILE`, `ENOMEM`), the next such report tries again. Loop
    /// thread only; costs one `kcmp(2)` per pass that drops a report.
    func dropStaleEntry(under descriptor: CInt) {
        let leftOut = poller.withRegistrations { table -> [(DescriptorWatch, LoopError)] in
            guard table.holdsStaleEntry(under: descriptor) else { return [] }
            guard let watches = try? table.rebuild() else { return [] }
            descriptorTable.staleEntriesDropped += 1
            return watches.map { watch in
                let error = lostDescriptorError(watch.descriptor, table, detail: "")
                watch.removal = .failed(error)
                return (watch, error)
            }
        }
        for (watch, error) in leftOut ?? [] { watchLeftTheSet(watch, error) }
    }

    /// What happened to the file of descriptor number `descriptor`, whose registration left the epoll set without
    /// its sources, as the kernel tells it now: closed; closed, its number naming another file since; or replaced
    /// (`dup2`, or closed and its number reused) while another descriptor or process keeps the file open, so its
    /// entry outlived the number. `detail` ends the message (the failed call). Error time, holding the lock.
    func lostDescriptorError(_ descriptor: CInt, _ table: EpollRegistrations, detail: String) -> LoopError {
        let message: String
        if !FileDescriptorCalls.isOpen(descriptor) {
            message = "descriptor \(descriptor) was closed while its source watched it\(detail)"
        } else if table.holdsStaleEntry(under: descriptor) {
            message =
                "descriptor \(descriptor) was replaced behind its source's back: it names another file now, while "
                + "another descriptor or process keeps the file it named open, so that file's epoll entry outlived "
                + "the number (the loop drops it by rebuilding its epoll set)\(detail)"
        } else {
            message =
                "descriptor \(descriptor) was closed while its source watched it, and its number now names another "
                + "file\(detail)"
        }
        return LoopError(.badDescriptor, errno: EBADF, message: message)
    }

    /// Puts a ready source among `ready`, after those of lower or equal order.
    @inline(__always)
    private func queue(
        _ source: DescriptorBackedSource,
        _ events: DescriptorBackedSource.Events,
        in ready: inout [(DescriptorBackedSource, DescriptorBackedSource.Events)]
    ) {
        let position = ready.firstIndex { $0.0.order > source.order } ?? ready.endIndex
        ready.insert((source, events), at: position)
    }

    /// Queues the sources of a shared registration other than its first that are in `state`; answers the union of
    /// what they watch.
    private func queueOthers(
        of watch: DescriptorWatch,
        _ events: DescriptorBackedSource.Events,
        in state: ModeState,
        into ready: inout [(DescriptorBackedSource, DescriptorBackedSource.Events)]
    ) -> DescriptorBackedSource.Events {
        var claimed: DescriptorBackedSource.Events = []
        for source in watch.others where source.isValid && source.isIn(modeID: state.id) {
            claimed.formUnion(source.watchedEvents)
            queue(source, events, in: &ready)
        }
        return claimed
    }

    /// Calls, with ``DescriptorBackedSource/Events/invalid``, the handlers of the failed sources that were in
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
            MetricsKeeper.bump(metricsKeeper.descriptorReports)
            let token = recordCalloutStart(.descriptor, at: source.callSite)
            source.callout(source, .invalid)
            recordCalloutEnd(token)
            told = true
        }
        return told
    }

    /// Whether a failed source waits for its last call in a run of `state`.
    func hasFailedSource(in state: ModeState) -> Bool {
        !descriptorTable.failed.isEmpty && descriptorTable.failed.contains { $0.modeIDs.contains(state.id) }
    }
}
