import Glibc
import RunLoopKit
import TestSupport
import Testing

@testable import RunLoopKitServices

/// File-change sources: each kind of change with its name, on the loop's thread; moves paired by cookie; the
/// watched directory going away; queue overflow reported; watches removed; invalidation closing the inotify
/// descriptor; refusals as typed errors.
///
/// Serialized: the tests count this process's inotify descriptors, which only this suite opens.
@Suite(.serialized) struct FileChangeSourceTests {
    /// Runs `body` on a fresh loop thread with a source watching a fresh directory, then runs the loop until
    /// `done` holds for what was recorded; answers the records.
    private func record(
        _ changes: FileChangeSource.Changes = .all,
        timeout: Duration = .seconds(10),
        making body: @escaping @Sendable (TemporaryDirectory) -> Void,
        until done: @escaping @Sendable ([RecordedChange]) -> Bool
    ) -> [RecordedChange] {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let recorder = Recorder<RecordedChange>()
        ItemsSupport.onLoopThread { loop in
            let source = try! FileChangeSource(watching: directory.path, for: changes) { _, change in
                recorder.append(
                    RecordedChange(
                        kind: change.kind, name: change.name, isDirectory: change.isDirectory, cookie: change.cookie,
                        onLoopThread: Loop.current === loop))
            }
            try! loop.add(source)
            body(directory)
            ItemsSupport.run(loop, timeout: timeout) { done(recorder.all) }
            source.invalidate()
        }
        return recorder.all
    }

    @Test func eachChangeInADirectoryArrivesWithItsNameAndKindOnTheLoopThread() {
        let records = record(
            making: { directory in
                directory.write("a")
                chmod(directory.path("a"), 0o600)
                rename(directory.path("a"), directory.path("b"))
                unlink(directory.path("b"))
                mkdir(directory.path("sub"), 0o755)
            },
            until: { records in
                records.contains { $0.kind == .created && $0.name == "sub" }
                    && records.contains { $0.kind == .closedAfterWriting }
            })
        let seen = records.map { "\($0)" }
        // The kernel reports closedAfterWriting when the file's last reference goes, which is later than `close`
        // when a child forked meanwhile by another test (spawning a process, `system`) still holds a copy of the
        // descriptor until it execs: it comes after "modified a", and may come after what followed.
        #expect(
            seen.filter { $0 != "closedAfterWriting a" } == [
                "created a", "modified a", "attributesChanged a", "movedFrom a", "movedTo b", "deleted b",
                "created sub/",
            ])
        #expect(seen.filter { $0 == "closedAfterWriting a" }.count == 1)
        #expect(seen.firstIndex(of: "closedAfterWriting a")! > seen.firstIndex(of: "modified a")!)
        #expect(records.allSatisfy { $0.onLoopThread })
        let moves = records.filter { $0.kind == .movedFrom || $0.kind == .movedTo }
        #expect(moves.count == 2 && moves[0].cookie != 0 && moves[0].cookie == moves[1].cookie)
        #expect(records.filter { $0.kind != .movedFrom && $0.kind != .movedTo }.allSatisfy { $0.cookie == 0 })
    }

    @Test func onlyTheChosenChangesAreReported() {
        let records = record(
            .created,
            making: { directory in
                directory.write("a")
                unlink(directory.path("a"))
                directory.write("last")
            },
            until: { $0.contains { $0.name == "last" } })
        #expect(records.map { "\($0)" } == ["created a", "created last"])
    }

    @Test func aWatchedFileReportsChangesWithoutAName() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        directory.write("file")
        let changes = Recorder<FileChange>()
        ItemsSupport.onLoopThread { loop in
            let source = try! FileChangeSource { _, change in changes.append(change) }
            let watch = try! source.addWatch(directory.path("file"), for: [.modified, .attributes])
            try! loop.add(source)
            directory.write("file", "more")
            chmod(directory.path("file"), 0o600)
            ItemsSupport.run(loop) { changes.all.contains { $0.kind == .attributesChanged } }
            #expect(changes.all.map(\.kind) == [.modified, .attributesChanged])
            #expect(changes.all.allSatisfy { $0.watch == watch && $0.name == nil && $0.path == watch.path })
            source.invalidate()
        }
    }

    @Test func theWatchedDirectoryRemovedEndsItsWatch() {
        let watchesLeft = Box<Int>()
        let directory = TemporaryDirectory()
        let changes = Recorder<FileChange>()
        ItemsSupport.onLoopThread { loop in
            let source = try! FileChangeSource(watching: directory.path) { _, change in changes.append(change) }
            try! loop.add(source)
            rmdir(directory.path)
            ItemsSupport.run(loop) { changes.all.contains { $0.kind == .watchEnded } }
            watchesLeft.value = source.watches.count
            source.invalidate()
        }
        #expect(changes.all.map(\.kind) == [.deletedSelf, .watchEnded])
        #expect(changes.all.allSatisfy { $0.path == directory.path && $0.name == nil })
        #expect(watchesLeft.value == 0)
    }

    /// More changes than the kernel queues (`fs.inotify.max_queued_events`) while the loop does not run: the
    /// handler hears every queued change, then the overflow.
    @Test func aQueueOverflowIsReportedAfterTheChangesThatFit() throws {
        let limitText = try String(contentsOfProcFile: "/proc/sys/fs/inotify/max_queued_events")
        let limit = try #require(Int(limitText))
        let records = record(
            .attributes, timeout: .seconds(60),
            making: { directory in
                directory.write("one")
                directory.write("two")
                // Alternating names: the kernel merges a change identical to the last one queued.
                for index in 0..<(limit + 100) { chmod(directory.path(index % 2 == 0 ? "one" : "two"), 0o600) }
            },
            until: { $0.last?.kind == .overflow })
        #expect(records.last?.kind == .overflow)
        #expect(records.filter { $0.kind == .overflow }.count == 1)
        #expect(records.dropLast().allSatisfy { $0.kind == .attributesChanged })
        #expect(records.count >= limit - 1 && records.count <= limit + 1, "\(records.count) changes for \(limit)")
        TestFigures.report("[fswatch] overflow after \(records.count - 1) queued changes (max_queued_events \(limit))")
    }

    @Test func aRemovedWatchReportsNothingMoreWhileTheOthersGoOn() {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        mkdir(directory.path("kept"), 0o755)
        mkdir(directory.path("dropped"), 0o755)
        let changes = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let source = try! FileChangeSource { _, change in changes.append(change.path ?? "?") }
            let kept = try! source.addWatch(directory.path("kept"), for: .created)
            let dropped = try! source.addWatch(directory.path("dropped"), for: .created)
            #expect(source.watches == [kept, dropped])
            try! loop.add(source)
            directory.write("dropped/before")  // Queued, not handled yet: dropped with the watch.
            #expect(source.removeWatch(dropped))
            #expect(!source.removeWatch(dropped))  // Twice: nothing to remove, and it says so.
            directory.write("dropped/after")
            directory.write("kept/file")
            ItemsSupport.run(loop) { changes.count > 0 }
            loop.run(in: .default, for: .milliseconds(50))
            #expect(source.watches == [kept])
            source.invalidate()
        }
        #expect(changes.all == [directory.path("kept/file")])
    }

    @Test func invalidationClosesTheInotifyDescriptorAndDropsWhatIsQueued() {
        let before = TemporaryDirectory.openInotifyDescriptors()
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // Which source saw what, so a failure says where an extra change came from.
        let changes = Recorder<String>()
        let running = ItemsSupport.startRunningLoop()
        let source = try! FileChangeSource(watching: directory.path, for: .created) { source, change in
            changes.append("first: \(change.kind) \(change.name ?? "-")")
            source.invalidate()  // From the handler: the rest of the batch is dropped.
        }
        try! running.loop.add(source)
        #expect(TemporaryDirectory.openInotifyDescriptors() == before + 1)
        directory.write("one")
        directory.write("two")
        #expect(waitUntil { changes.all.count == 1 && !source.isValid })
        #expect(waitUntil { TemporaryDirectory.openInotifyDescriptors() == before })
        #expect(!running.loop.contains(source))
        directory.write("three")

        // From another thread, while the loop sleeps. Creations only: "three"'s closedAfterWriting can come after
        // this watch starts, when a child forked meanwhile by another test still holds a copy of its descriptor.
        let other = try! FileChangeSource(watching: directory.path, for: .created) { _, change in
            changes.append("other: \(change.kind) \(change.name ?? "-")")
        }
        try! running.loop.add(other)
        #expect(waitUntil { running.loop.isWaiting })
        other.invalidate()
        #expect(TemporaryDirectory.openInotifyDescriptors() == before)
        directory.write("four")
        running.loop.perform {}
        running.finish()
        #expect(changes.all == ["first: created one"])
        #expect(!other.isValid)
    }

    @Test func aSourceNobodyHoldsIsKeptByItsLoopAndClosedWithIt() {
        let before = TemporaryDirectory.openInotifyDescriptors()
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let changes = Counter()
        let running = ItemsSupport.startRunningLoop()
        try! running.loop.add(try! FileChangeSource(watching: directory.path) { _, _ in changes.increment() })
        directory.write("file")
        #expect(waitUntil { changes.current > 0 })
        running.finish()
        #expect(waitUntil { TemporaryDirectory.openInotifyDescriptors() == before })
        let unscheduled = try? FileChangeSource(watching: directory.path) { _, _ in }
        #expect(unscheduled != nil)
        #expect(TemporaryDirectory.openInotifyDescriptors() == before + 1)
    }

    @Test func changesWaitWhileTheSourceIsInNoRunningMode() {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let names = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let source = try! FileChangeSource(watching: directory.path, for: .created) { _, change in
                names.append(change.name ?? "?")
            }
            try! loop.add(source, to: Loop.Mode("Other"))
            try! loop.add(ItemsSupport.keepAlive())
            directory.write("early")
            loop.run(in: .default, for: .milliseconds(50))
            #expect(names.count == 0)
            ItemsSupport.run(loop, in: Loop.Mode("Other")) { names.count > 0 }
            loop.remove(source, from: Loop.Mode("Other"))
            #expect(!loop.contains(source, in: Loop.Mode("Other")))
            directory.write("late")
            try! loop.add(source)
            ItemsSupport.run(loop) { names.count > 1 }
            source.invalidate()
        }
        #expect(names.all == ["early", "late"])
    }

    @Test func refusalsAreTypedErrors() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        directory.write("file")
        let source = try FileChangeSource { _, _ in }
        func code(_ body: () throws -> Void) -> LoopError.Code? {
            do {
                try body()
                return nil
            } catch {
                return (error as? LoopError)?.code
            }
        }
        let missing = code { try source.addWatch(directory.path("missing")) }
        #expect(missing == .notFound)
        #expect(code { try source.addWatch(directory.path("file/below")) } == .invalidArgument)
        #expect(code { try source.addWatch("") } == .invalidArgument)
        #expect(code { try source.addWatch(directory.path, for: []) } == .invalidArgument)
        let first = try source.addWatch(directory.path, for: .created)
        let again = try source.addWatch(directory.path + "/.", for: .deleted)  // The same directory: the same watch.
        #expect(first == again && again.path == directory.path && source.watches.count == 1)
        let other = try FileChangeSource(watching: directory.path) { _, _ in }
        #expect(!other.removeWatch(first))  // Another source's watch: nothing, and it says so.
        #expect(other.watches.count == 1 && source.watches.count == 1)
        source.invalidate()
        #expect(!source.removeWatch(first))  // Invalidation ended every watch.
        #expect(code { try source.addWatch(directory.path) } == .invalidated)
        #expect(code { try Loop.current.add(source) } == .invalidated)
        #expect(source.watches.isEmpty)
        do {
            try other.addWatch(directory.path("missing"))
        } catch {
            #expect(error.errno == ENOENT && error.message.contains("missing"))
        }
    }
}

extension String {
    /// The trimmed text of a small `/proc` file.
    init(contentsOfProcFile path: String) throws {
        guard let file = fopen(path, "r") else { throw LoopError(.notFound, message: path) }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 256)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { throw LoopError(.notFound, message: path) }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
    }
}

extension FileChangeSourceTests {
    /// A watcher that should not keep a script running: `keepsRunAlive = false` lets the run finish while the
    /// source still reports what happens while the loop runs for other reasons.
    @Test func aSourceThatDoesNotKeepTheRunAliveStillReports() {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let names = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            let source = try! FileChangeSource(watching: directory.path, for: .created) { _, change in
                names.append(change.name ?? "?")
            }
            source.keepsRunAlive = false
            try! loop.add(source)
            #expect(loop.run(in: .default, for: .seconds(5)) == .finished)
            let timer = ItemsSupport.keepAlive()
            try! loop.add(timer)
            directory.write("seen")
            ItemsSupport.run(loop) { names.count > 0 }
            timer.invalidate()
            source.keepsRunAlive = true  // Applied to the registered source too.
            #expect(loop.run(in: .default, for: .milliseconds(20)) == .timedOut)
            source.invalidate()
        }
        #expect(names.all == ["seen"])
    }
}

extension FileChangeSourceTests {
    /// A storm of changes under a rate limit: the second batch waits for the window's end, queued in the kernel,
    /// and is then reported whole.
    @Test func aRateLimitedSourceReportsTheChangesThatWaitedAfterThePause() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let names = Recorder<String>()
        let times = Recorder<ContinuousClock.Instant>()
        let pausedSeen = ItemsSupport.Flag()
        ItemsSupport.onLoopThread { loop in
            let source = try! FileChangeSource(watching: directory.path, for: .created) { _, change in
                names.append(change.name ?? "?")
                times.append(.now)
            }
            source.rateLimit = try! RateLimit(burst: 1, per: .milliseconds(300))
            try! loop.add(source)
            try! loop.add(ItemsSupport.keepAlive())
            directory.write("first")
            ItemsSupport.run(loop) { names.count == 1 }
            directory.write("second")
            directory.write("third")
            ItemsSupport.run(loop) {
                if source.isRateLimited { pausedSeen.set() }
                return names.count == 3
            }
            #expect(source.rateLimit != nil)
            source.invalidate()
        }
        #expect(names.all == ["first", "second", "third"])
        #expect(pausedSeen.isSet)
        let gap = times.all[1] - times.all[0]
        #expect(gap >= .milliseconds(250), "the second batch came \(gap) after the first")
    }
}
