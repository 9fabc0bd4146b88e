import Glibc
import TestSupport

@testable import RunLoopKit

/// The descriptor steps on the real loop, and the comparison of its registrations with the model's.
extension ModelRealLoop {
    /// A connected, non-blocking Unix stream socket pair: the first end is always writable, and readable while the
    /// second has written something the first did not read. Each socket has its own inode, so replacing one by
    /// another gives the loop a file it can tell apart (eventfds all share one).
    static func socketPair() -> (CInt, CInt) {
        var ends: [CInt] = [-1, -1]
        let kind = CInt(SOCK_STREAM.rawValue) | CInt(SOCK_NONBLOCK.rawValue) | CInt(SOCK_CLOEXEC.rawValue)
        precondition(socketpair(AF_UNIX, kind, 0, &ends) == 0, "socketpair failed: errno \(errno)")
        return (ends[0], ends[1])
    }

    /// A pipe (read end, writer), non-blocking and close-on-exec.
    static func pipePair() -> (CInt, CInt) {
        var ends: [CInt] = [-1, -1]
        precondition(pipe(&ends) == 0, "pipe failed: errno \(errno)")
        for end in ends {
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        return (ends[0], ends[1])
    }

    /// The watched end and its peer for `slot`: the pipe slot's is a pipe, the others' a socket pair.
    static func descriptorPair(slot: Int) -> (CInt, CInt) {
        slot == LoopModel.pipeSlot ? pipePair() : socketPair()
    }

    func executeDescriptorStep(_ op: ModelOp) {
        switch op {
        case .createDescriptorSource(let id, let slot, let events, let order, let actions):
            let source = try! FileDescriptorSource(
                descriptor: watched[slot], events: events, order: order
            ) { [weak self] _, ready in
                guard let self else { return }
                trace.append("D\(order)/\(id):\(ready)")
                guard ready != .invalid else { return }  // As the model: no actions on the last call.
                for action in actions { execute(action) }
            }
            descriptorSources[id] = source
            descriptorIDsByObject[ObjectIdentifier(source)] = id
            liveDescriptorIDs.insert(id)
        case .setEvents(let id, let events):
            descriptorSources[id]!.events = events
        case .makeReadable(let slot):
            guard peers[slot] >= 0 else { return }  // The pipe's writer is closed.
            var byte: UInt8 = 1
            precondition(write(peers[slot], &byte, 1) == 1, "write to the peer failed: errno \(errno)")
        case .drain(let slot):
            var buffer = [UInt8](repeating: 0, count: 4096)
            while read(watched[slot], &buffer, buffer.count) > 0 {}
        case .replaceDescriptor(let slot):
            // dup2 closes the old file and puts the new one at its number in one step: no other thread of the test
            // process can take the number in between.
            let (end, peer) = Self.descriptorPair(slot: slot)
            precondition(moveDescriptor(end, onto: watched[slot]), "dup2 failed: errno \(errno)")
            if peers[slot] >= 0 { close(peers[slot]) }
            peers[slot] = peer
        case .hangUp(let slot):
            if peers[slot] >= 0 { close(peers[slot]) }
            peers[slot] = -1
        default:
            preconditionFailure("not a descriptor step: \(op)")
        }
    }

    /// Closes the test's descriptors; after every source was invalidated.
    func closeDescriptors() {
        for descriptor in watched + peers where descriptor >= 0 { close(descriptor) }
        watched = []
        peers = []
    }

    /// Differences between the loop's registrations and the model's, and breaches of the bookkeeping invariants
    /// (``Loop/descriptorRegistrationProblems(sources:staleDescriptors:)``). Empty when they agree.
    func registrationDifferences(from model: LoopModel) -> [String] {
        var staleDescriptors: Set<CInt> = []
        for (slot, reg) in model.loopTable where model.registrations[reg]!.file != model.slots[slot].file {
            staleDescriptors.insert(watched[slot])
        }
        // Invalid sources stay invalid: the invariants check that none is in a registration.
        liveDescriptorIDs = liveDescriptorIDs.filter { descriptorSources[$0]!.isValid }
        var problems = loop.descriptorRegistrationProblems(
            sources: liveDescriptorIDs.map { descriptorSources[$0]! }, staleDescriptors: staleDescriptors)
        let snapshot = loop.descriptorRegistrationSnapshot()
        let kernel = loop.epollKernelEntries()
        let ids = descriptorIDsByObject
        var seen: Set<Int> = []
        for registration in snapshot.registrations {
            guard let slot = watched.firstIndex(of: registration.descriptor) else {
                problems.append("a registration of descriptor \(registration.descriptor), not the test's")
                continue
            }
            seen.insert(slot)
            guard let reg = model.loopTable[slot], let expected = model.registrations[reg] else {
                problems.append("slot \(slot) is registered; the model has no registration")
                continue
            }
            let actualIDs = registration.sources.map { ids[ObjectIdentifier($0)] ?? -1 }.sorted()
            if actualIDs != expected.sources.sorted() {
                problems.append("slot \(slot)'s registration holds \(actualIDs), expected \(expected.sources.sorted())")
            }
            if registration.registeredEvents != expected.registered {
                problems.append(
                    "slot \(slot) registered \(registration.registeredEvents), expected \(expected.registered)")
            }
            // Watching nothing, the entry is one-shot: after it reported a hang-up the kernel keeps EPOLLONESHOT only.
            if expected.registered.isEmpty, let entry = kernel[registration.descriptor],
                model.registrations[reg]!.file == model.slots[slot].file
            {
                let disarmed = entry.events & 0x18 == 0  // EPOLLERR | EPOLLHUP gone
                if disarmed == expected.armed {
                    problems.append("slot \(slot)'s one-shot entry is \(disarmed ? "disarmed" : "armed") in the kernel")
                }
            }
            if registration.isParked != expected.parked {
                problems.append("slot \(slot) parked is \(registration.isParked), expected \(expected.parked)")
            }
        }
        for slot in model.loopTable.keys where !seen.contains(slot) {
            problems.append("slot \(slot) is not registered; the model has a registration")
        }
        // Parked in the order epoll reported them (unspecified): compared as sets.
        let parked = snapshot.parkedDescriptors.map { watched.firstIndex(of: $0) ?? -1 }.sorted()
        let expectedParked = model.parkedRegistrations.map { model.registrations[$0]!.slot }.sorted()
        if parked != expectedParked { problems.append("parked slots \(parked), expected \(expectedParked)") }
        let failed = snapshot.failedSources.map { ids[ObjectIdentifier($0)] ?? -1 }.sorted()
        let expectedFailed = model.failedSources.map(\.id).sorted()
        if failed != expectedFailed {
            problems.append("sources awaiting their last call: \(failed), expected \(expectedFailed)")
        }
        return problems
    }
}
