import CRunLoopKitGLib
import CRunLoopShims
import Glibc
import RunLoopKit
import RunLoopKitSystem

/// The descriptors GLib asked to poll in the current iteration, kept in an epoll set of the bridge's own, which the
/// loop watches with one descriptor source. Loop thread only (``GLibDriver`` uses it).
///
/// Why a nested set rather than one ``FileDescriptorSource`` per GLib descriptor:
/// - GLib may poll a descriptor the app also watches with a source of the same loop, and it rebuilds its poll set on
///   every iteration: in a set of its own (an open file can sit in any number of epoll sets), those changes never
///   touch the loop's registration, which the app's sources of the descriptor share.
/// - GLib wants the readiness of its set at the moment it checks: one `epoll_wait` with a zero timeout on this set,
///   right before `g_main_context_check`, answers it fresh, whatever step of the pass the check runs in.
/// - Between two iterations GLib may close a descriptor and reuse its number for another file (see ``update(_:count:)``).
final class GLibPollSet {
    /// One descriptor in the set: the conditions GLib asked for, and the generation its reports are tagged with.
    private struct Entry {
        var descriptor: CInt
        var events: UInt16
        var generation: UInt32

        /// The report tag: the generation above the descriptor, so a report from an entry the set no longer holds
        /// (an orphan, see ``GLibPollSet/collect(into:count:)``) is told from the entry that took its number.
        var tag: UInt64 { UInt64(generation) << 32 | UInt64(UInt32(bitPattern: descriptor)) }
    }

    // GIOCondition bits, which are poll(2)'s and, for these five, epoll's too: a condition passes unchanged.
    static let input: UInt16 = 1
    static let output: UInt16 = 4
    static let invalid: UInt16 = 32
    /// The bits epoll reports that GLib knows: IN, PRI, OUT, ERR, HUP.
    static let reportable: UInt32 = 0x1f

    let loop: Loop
    let mode: Loop.Mode
    /// Called on the loop's thread when the set polls readable: one of GLib's descriptors is ready.
    let onReady: @Sendable () -> Void

    /// The epoll set.
    private(set) var descriptor: CInt
    /// The loop's source watching ``descriptor``.
    private var source: FileDescriptorSource
    /// What the set holds, by ascending descriptor.
    private var entries: [Entry] = []
    /// ``entries`` being built by ``update(_:count:)`` (kept to reuse its storage).
    private var nextEntries: [Entry] = []
    /// Descriptors epoll refused, with what `poll(2)` would report for each: `G_IO_NVAL` for a closed one, IN and OUT
    /// as asked for a regular file (which epoll cannot watch and poll calls always ready), nothing for the loop's own
    /// epoll set.
    private var refused: [(descriptor: CInt, revents: UInt16)] = []

    /// Whether a refused descriptor polls ready at once (so GLib's iteration must not wait for the set).
    var hasReadyRefusal: Bool { refused.contains { $0.revents != 0 } }
    /// The buffer ``collect(into:count:)`` reads reports into: room for every entry.
    private var reports: UnsafeMutableBufferPointer<epoll_event>
    /// The last generation handed out.
    private var generation: UInt32 = 0
    /// A report came from an entry the set should not hold: the next update builds a fresh set.
    private var orphanReported = false

    /// Makes an empty set and adds its source to `loop` in `mode`. Loop thread only.
    /// - Throws: `systemCallFailed` when the set cannot be made (out of descriptors); the loop's own error when it
    ///   refuses the source (`loopTerminated`: its thread has exited).
    init(loop: Loop, mode: Loop.Mode, onReady: @escaping @Sendable () -> Void) throws(LoopError) {
        self.loop = loop
        self.mode = mode
        self.onReady = onReady
        let made: CInt
        do {
            made = try Epoll.create()
        } catch {
            throw LoopError(systemCall: error, context: "making the epoll set for GLib's descriptors")
        }
        do {
            source = try Self.watch(made, on: loop, in: mode, onReady: onReady)
        } catch {
            FileDescriptorCalls.close(made)
            throw error
        }
        descriptor = made
        reports = .allocate(capacity: 16)
    }

    /// Stops watching and closes the set. Loop thread only; once.
    func close() {
        source.invalidate()
        FileDescriptorCalls.close(descriptor)
        reports.deallocate()
    }

    /// Makes the set hold exactly the descriptors of `records` (what `g_main_context_query` answered: one record
    /// per descriptor, by ascending descriptor, which `g_main_context_check` relies on too), each watched for the
    /// conditions its record asks.
    ///
    /// Every descriptor still listed is re-registered with `EPOLL_CTL_MOD`, even when nothing changed: that one call
    /// per descriptor and iteration is what finds a descriptor closed and its number reused for another file since
    /// the last iteration. epoll keys an entry by the open file, not by the number; the new file has no entry, so the
    /// call fails with `ENOENT`, and the new file is added. Trusting the number instead would leave GLib's new
    /// source unwatched for good, and its iteration would never come.
    func update(_ records: UnsafeMutablePointer<RLKGPollFD>, count: Int) {
        if orphanReported { startOver() }
        refused.removeAll(keepingCapacity: true)
        nextEntries.removeAll(keepingCapacity: true)
        var old = 0
        for index in 0..<count {
            let record = records[index]
            while old < entries.count && entries[old].descriptor < record.fd {
                remove(entries[old])
                old += 1
            }
            if old < entries.count && entries[old].descriptor == record.fd {
                keep(entries[old], events: record.events)
                old += 1
            } else {
                add(record.fd, events: record.events)
            }
        }
        while old < entries.count {
            remove(entries[old])
            old += 1
        }
        swap(&entries, &nextEntries)
        if reports.count < entries.count {
            reports.deallocate()
            reports = .allocate(capacity: entries.count * 2)
        }
    }

    /// Writes into `records` (the ones last given to ``update(_:count:)``) the conditions that hold now, as
    /// `poll(2)` would have: one `epoll_wait` that does not wait, then the refused descriptors' fixed answers.
    func collect(into records: UnsafeMutablePointer<RLKGPollFD>, count: Int) {
        // Only a bug can make the set's own wait fail (a closed set, a bad buffer): then nothing is ready.
        let ready = (try? Epoll.wait(descriptor, into: reports, timeoutMilliseconds: 0)) ?? 0
        for index in 0..<ready {
            let report = reports[index]
            let tag = report.data.u64
            let number = CInt(bitPattern: UInt32(truncatingIfNeeded: tag))
            let entry = Self.firstIndex(count: entries.count) { entries[$0].descriptor >= number }
            guard entry < entries.count, entries[entry].descriptor == number,
                entries[entry].generation == UInt32(truncatingIfNeeded: tag >> 32)
            else {
                // An orphan: an entry of a file GLib closed while the file lived on elsewhere (a duplicate, a
                // child's copy), so the kernel kept it, and no call by number can reach it any more. It could keep
                // the loop awake for nothing: start a fresh set at the next update.
                orphanReported = true
                continue
            }
            if let record = Self.index(of: number, in: records, count: count) {
                records[record].revents |= UInt16(truncatingIfNeeded: report.events & Self.reportable)
            }
        }
        for (number, revents) in refused {
            if let record = Self.index(of: number, in: records, count: count) { records[record].revents = revents }
        }
    }

    // MARK: Changes

    /// Keeps `entry`, watching `events` now; re-adds its number if it names another file than the set holds.
    private func keep(_ entry: Entry, events: UInt16) {
        switch Self.errno(
            of: try Epoll.modify(
                descriptor, entry.descriptor, events: Epoll.Events(rawValue: UInt32(events)), data: entry.tag))
        {
        case 0: nextEntries.append(Entry(descriptor: entry.descriptor, events: events, generation: entry.generation))
        case ENOENT: add(entry.descriptor, events: events)  // Closed, and the number reused: watch the new file.
        case EPERM: refuse(entry.descriptor, revents: events & (Self.input | Self.output))  // Now a regular file.
        default: refuse(entry.descriptor, revents: Self.invalid)  // EBADF: closed, though GLib still lists it.
        }
    }

    /// Adds `number` for `events` under a new generation.
    private func add(_ number: CInt, events: UInt16) {
        generation &+= 1
        let entry = Entry(descriptor: number, events: events, generation: generation)
        switch Self.errno(
            of: try Epoll.add(descriptor, number, events: Epoll.Events(rawValue: UInt32(events)), data: entry.tag))
        {
        case 0:
            nextEntries.append(entry)
        case EEXIST:
            // The set still holds this very file under this number, from an entry a failed removal left behind:
            // take it over under the new tag.
            let status = Self.errno(
                of: try Epoll.modify(
                    descriptor, number, events: Epoll.Events(rawValue: UInt32(events)), data: entry.tag))
            if status == 0 { nextEntries.append(entry) } else { refuse(number, revents: Self.invalid) }
        case EPERM:
            refuse(number, revents: events & (Self.input | Self.output))  // A regular file or a directory.
        case ELOOP, EINVAL:
            // An epoll set that holds this one: the loop's own (the loop is attached to the context it drives), or
            // this set itself. Its readiness is the loop's own work, which the running loop does anyway: it is left
            // unwatched, never ready (watching it would make a cycle, and calling it ready would spin).
            refuse(number, revents: 0)
        default:
            // EBADF (not open), ENOMEM, ENOSPC (max_user_watches): GLib's source hears G_IO_NVAL, as poll(2) says
            // of a descriptor it cannot poll.
            refuse(number, revents: Self.invalid)
        }
    }

    /// Takes `entry` out of the set. A descriptor closed meanwhile is already out (or an orphan, see
    /// ``collect(into:count:)``): its failure needs nothing.
    private func remove(_ entry: Entry) {
        _ = Self.errno(of: try Epoll.remove(descriptor, entry.descriptor))
    }

    /// 0 when `change` succeeds, else the `errno` it failed with: each caller decides what a failure means for a GLib
    /// descriptor.
    private static func errno(of change: @autoclosure () throws(SystemError) -> Void) -> CInt {
        do {
            try change()
            return 0
        } catch {
            return error.errno
        }
    }

    private func refuse(_ number: CInt, revents: UInt16) {
        refused.append((number, revents))
    }

    /// Replaces the set with an empty one (the only way to drop an orphan); the update that follows fills it. Keeps
    /// the old set when a new one cannot be made or watched: the orphan's next report tries again.
    private func startOver() {
        orphanReported = false
        guard let fresh = try? Epoll.create() else { return }
        guard let freshSource = try? Self.watch(fresh, on: loop, in: mode, onReady: onReady) else {
            FileDescriptorCalls.close(fresh)
            return
        }
        source.invalidate()
        FileDescriptorCalls.close(descriptor)
        descriptor = fresh
        source = freshSource
        entries.removeAll(keepingCapacity: true)
    }

    // MARK: Helpers

    /// A source on `set`, added to `loop` in `mode`, that calls `onReady`; it never keeps a run alive.
    private static func watch(
        _ set: CInt, on loop: Loop, in mode: Loop.Mode, onReady: @escaping @Sendable () -> Void
    ) throws(LoopError) -> FileDescriptorSource {
        let source = try FileDescriptorSource(descriptor: set, events: .readable) { _, _ in onReady() }
        source.keepsRunAlive = false
        try loop.add(source, to: mode)
        return source
    }

    /// The index of the record for descriptor `number` (records are sorted by descriptor).
    private static func index(of number: CInt, in records: UnsafeMutablePointer<RLKGPollFD>, count: Int) -> Int? {
        let index = firstIndex(count: count) { records[$0].fd >= number }
        return index < count && records[index].fd == number ? index : nil
    }

    /// The first index in `0..<count` at which `isAtOrAfter` holds (`count` if none), for a condition that, once it
    /// holds, holds for every later index: a binary search.
    private static func firstIndex(count: Int, where isAtOrAfter: (Int) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if isAtOrAfter(middle) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
