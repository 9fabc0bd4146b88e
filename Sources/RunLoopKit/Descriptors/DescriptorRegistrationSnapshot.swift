/// A copy of a loop's descriptor-source bookkeeping at one moment: each registration the loop's thread knows
/// (``DescriptorTable``), what the epoll set was told for it, its sources and holders, and whether the poller's
/// table (``EpollRegistrations``) still names it. For tests' invariant checks; nothing in the library reads it.
struct DescriptorRegistrationSnapshot {
    /// One ``DescriptorWatch`` as the loop's thread knows it.
    struct Registration {
        let watch: DescriptorWatch
        let descriptor: CInt
        /// What the epoll set was last told for it.
        let registeredEvents: DescriptorBackedSource.Events
        /// The union of what its valid sources watch.
        let wanted: DescriptorBackedSource.Events
        let isParked: Bool
        /// Whether ``DescriptorTable/parked`` holds it.
        let isInParkedList: Bool
        /// The sources in its list (``DescriptorWatch/forEachSource(_:)``).
        let sources: [DescriptorBackedSource]
        /// How many sources hold the registration (``DescriptorWatch/users``).
        let users: Int
        /// Whether the poller's table names it for its number and it has not left the set.
        let isInEpollTable: Bool
    }

    /// The loop's epoll set.
    let epollDescriptor: CInt
    let registrations: [Registration]
    /// The descriptors of the parked registrations, in the order they are resumed.
    let parkedDescriptors: [CInt]
    /// Watches in ``DescriptorTable/parked`` that are not registered (left the set, or replaced): should be none.
    let strayParkedCount: Int
    /// Numbers the poller's table holds that the loop's thread does not know: should be none between passes.
    let unknownEpollEntries: [CInt]
    /// Sources waiting for their last (``DescriptorBackedSource/Events/invalid``) call.
    let failedSources: [DescriptorBackedSource]
}

extension Loop {
    /// The descriptor-source bookkeeping as it is now. Loop thread only (tests).
    func descriptorRegistrationSnapshot() -> DescriptorRegistrationSnapshot {
        let known = Set(descriptorTable.registered.keys)
        let table = poller.withRegistrations { table in
            (table.watches.mapValues { ($0, $0.users, $0.removal == nil) }, Array(table.watches.keys))
        }
        let entries = table?.0 ?? [:]
        var registrations: [DescriptorRegistrationSnapshot.Registration] = []
        for (descriptor, entry) in descriptorTable.registered.sorted(by: { $0.key < $1.key }) {
            let watch = entry.takeUnretainedValue()
            var sources: [DescriptorBackedSource] = []
            watch.forEachSource { sources.append($0) }
            let tableEntry = entries[descriptor]
            registrations.append(
                DescriptorRegistrationSnapshot.Registration(
                    watch: watch, descriptor: descriptor, registeredEvents: watch.registeredEvents,
                    wanted: watch.wanted, isParked: watch.isParked,
                    isInParkedList: descriptorTable.parked.contains { $0 === watch }, sources: sources,
                    users: tableEntry.map { $0.0 === watch ? $0.1 : 0 } ?? 0,
                    isInEpollTable: tableEntry.map { $0.0 === watch && $0.2 } ?? false))
        }
        return DescriptorRegistrationSnapshot(
            epollDescriptor: poller.epoll, registrations: registrations,
            parkedDescriptors: descriptorTable.parked.map(\.descriptor),
            strayParkedCount: descriptorTable.parked.count { !isRegistered($0) },
            unknownEpollEntries: (table?.1 ?? []).filter { !known.contains($0) }.sorted(),
            failedSources: descriptorTable.failed.map(\.source))
    }
}
