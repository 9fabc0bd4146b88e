import Glibc
import TestSupport

@testable import RunLoopKit

extension Loop {
    /// Breaches of the descriptor-registration invariants, checked against the loop's bookkeeping
    /// (``descriptorRegistrationSnapshot()``) and the kernel's view of the epoll set (`/proc/self/fdinfo`); empty
    /// when all hold. Call on the loop's thread, between passes (not from a handler), with every descriptor source
    /// the test made for this loop; `staleDescriptors` are numbers whose file the test replaced behind its sources'
    /// backs, which the loop has not noticed yet (the kernel drops their entries once the replaced files close).
    ///
    /// - every valid source holding a registration of this loop is in the registration of its descriptor, and only
    ///   valid sources are in one; each registration has a source (none without a watcher), as many holders as
    ///   sources, and is the poller table's entry for its number;
    /// - what the epoll set was told is the union of what its sources watch, or, while parked, part of it; the parked
    ///   list holds exactly the parked registrations;
    /// - the kernel's entries are exactly the registrations (stale ones excepted), with the same tag and mask.
    func descriptorRegistrationProblems(
        sources: [FileDescriptorSource], staleDescriptors: Set<CInt> = []
    ) -> [String] {
        let snapshot = descriptorRegistrationSnapshot()
        var problems: [String] = []
        if snapshot.strayParkedCount != 0 { problems.append("\(snapshot.strayParkedCount) stray parked watches") }
        if !snapshot.unknownEpollEntries.isEmpty {
            problems.append("poller table entries the loop does not know: \(snapshot.unknownEpollEntries)")
        }
        let pollerID = ObjectIdentifier(poller)
        for source in sources {
            let inRegistration = snapshot.registrations.first { registration in
                registration.sources.contains { $0 === source }
            }
            if source.isValid, let held = source.heldWatch, held.pollerID == pollerID {
                if inRegistration?.watch !== held {
                    problems.append("valid source on descriptor \(source.descriptor) is not in its registration")
                }
            } else if let inRegistration, !source.isValid {
                problems.append("invalid source in the registration of \(inRegistration.descriptor)")
            }
        }
        let kernel = epollKernelEntries()
        var kernelTags = Set(kernel.filter { $0.value.tag > Poller.lastLoopTag }.map(\.value.tag))
        for registration in snapshot.registrations {
            let name = "registration of \(registration.descriptor)"
            if registration.sources.isEmpty { problems.append("\(name) has no source") }
            if registration.users != registration.sources.count {
                problems.append("\(name) has \(registration.users) holders, \(registration.sources.count) sources")
            }
            if !registration.isInEpollTable { problems.append("\(name) is not the poller table's entry") }
            for source in registration.sources where source.watch !== registration.watch || !source.isValid {
                problems.append("\(name) lists a source that is invalid or names another watch")
            }
            if registration.isParked {
                if !registration.wanted.isSuperset(of: registration.registeredEvents) {
                    problems.append(
                        "parked \(name) told \(registration.registeredEvents), more than \(registration.wanted)")
                }
            } else if registration.registeredEvents != registration.wanted {
                problems.append(
                    "\(name) told \(registration.registeredEvents), its sources watch \(registration.wanted)")
            }
            if registration.isParked != registration.isInParkedList {
                problems.append("\(name) parked is \(registration.isParked), in the parked list is the opposite")
            }
            let entry = kernel[registration.descriptor]
            if staleDescriptors.contains(registration.descriptor) {
                // The kernel drops the entry when the replaced file closes, which is usually at once. But a child
                // process another test forked meanwhile holds every file of ours until it execs or exits, and the
                // entry lives as long as the file does (no call on the number can reach it): tolerated, not checked.
                kernelTags.remove(registration.watch.tag)
                continue
            }
            kernelTags.remove(registration.watch.tag)
            // epoll_ctl adds EPOLLERR and EPOLLHUP to every non-exclusive entry.
            let errorAndHangUp: UInt32 = 0x008 | 0x010  // EPOLLERR | EPOLLHUP
            let mask = registration.registeredEvents.epollEvents.rawValue | errorAndHangUp
            // A one-shot entry (watching nothing) that reported is disarmed: the kernel keeps only EPOLLONESHOT.
            let disarmed = registration.registeredEvents.epollEvents.rawValue & ~errorAndHangUp
            let masks =
                registration.registeredEvents.isDisjoint(with: [.readable, .writable, .priority])
                ? [mask, disarmed] : [mask]
            if entry?.tag != registration.watch.tag || !masks.contains(entry?.events ?? 0) {
                problems.append("\(name): the kernel has \(entry.map { "\($0)" } ?? "no entry"), expected mask \(mask)")
            }
        }
        if !kernelTags.isEmpty { problems.append("kernel entries of no registration: tags \(kernelTags.sorted())") }
        return problems
    }

    /// The loop's epoll set's entries as the kernel lists them in `/proc/self/fdinfo`: number → (event mask, tag).
    func epollKernelEntries() -> [CInt: (events: UInt32, tag: UInt64)] {
        let descriptor = open("/proc/self/fdinfo/\(poller.epoll)", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return [:] }
        defer { close(descriptor) }
        let bytes = readToEnd(descriptor)
        var entries: [CInt: (events: UInt32, tag: UInt64)] = [:]
        // "tfd:        7 events:       19 data:       100000007  pos:0 ino:... sdev:..."
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("tfd:") {
            let fields = line.split(separator: " ")
            func value(after key: String) -> Substring? {
                fields.firstIndex(of: Substring(key)).flatMap { $0 + 1 < fields.count ? fields[$0 + 1] : nil }
            }
            guard let number = value(after: "tfd:").flatMap({ CInt($0) }),
                let events = value(after: "events:").flatMap({ UInt32($0, radix: 16) }),
                let tag = value(after: "data:").flatMap({ UInt64($0, radix: 16) })
            else { continue }
            entries[number] = (events, tag)
        }
        return entries
    }
}
