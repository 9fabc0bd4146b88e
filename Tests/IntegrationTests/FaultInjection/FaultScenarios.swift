import CRunLoopShims
import Glibc
import RunLoopKitSystem
import Synchronization
import TestSupport

@testable import RunLoopKit
@testable import RunLoopKitServices

/// Plays one ``FaultCase``: sets up its scenario, makes the call fail as scripted, and checks what the caller saw
/// and the properties every case must keep (the fault was hit, no descriptor of the library leaked, no item
/// silently dead, no spinning loop, no accepted block lost or run twice). Runs in an exit-test child: the fault
/// script is process-wide. Answers the problems found (empty: the case passes); a `.trap` case never returns.
enum FaultScenarios {
    static func play(_ fault: FaultCase) -> [String] {
        var problems: [String] = []
        let before = FaultInjection.openDescriptors
        switch fault.scenario {
        case .loopCreation: loopCreation(fault, &problems)
        case .loopThreadOptions: loopThreadOptions(fault, &problems)
        case .descriptorAdd: descriptorAdd(fault, &problems)
        case .descriptorModify, .descriptorModifyFromAnotherThread, .descriptorPark, .descriptorUnpark:
            descriptorChange(fault, &problems)
        case .descriptorRemove: descriptorRemove(fault, &problems)
        case .descriptorJoin, .descriptorJoinModify, .descriptorLeaveModify, .descriptorSharedRemove:
            sharedDescriptor(fault, &problems)
        case .wakeUpWrite, .wakeUpRead: wakeUp(fault, &problems)
        case .wait, .timerArm: waitAndTimer(fault, &problems)
        case .signalSourceCreate: signalSourceCreate(fault, &problems)
        case .signalRelayWrite, .signalSourceRead: signalDelivery(fault, &problems)
        case .childExitCreate, .childExitReap: childExit(fault, &problems)
        case .threadNameLookup: threadName(fault, &problems)
        case .serviceNotification: serviceNotification(fault, &problems)
        case .fileChangeCreate, .fileChangeWatch, .fileChangeUnwatch, .fileChangeRead: fileChange(fault, &problems)
        case .memoryPressureCreate: memoryPressure(fault, &problems)
        }
        let leaked = FaultInjection.openDescriptors.filter { before[$0.key] == nil }
        if !leaked.isEmpty { problems.append("descriptors leaked: \(leaked)") }
        return problems.map { "\(fault.testDescription): \($0)" }
    }

    // MARK: Shared checks

    /// Runs `body` with the case's fault installed; notes a problem unless the fault was hit as scripted.
    @discardableResult
    fileprivate static func injecting<T>(_ fault: FaultCase, _ problems: inout [String], _ body: () -> T) -> T {
        let (result, counts) = FaultInjection.with([fault.fault], body)
        if counts.first != fault.times { problems.append("fault hit \(counts.first ?? 0)×, scripted \(fault.times)×") }
        return result
    }

    /// Checks a thrown error against the case's expectation.
    fileprivate static func check(_ error: LoopError?, _ fault: FaultCase, _ problems: inout [String]) {
        switch fault.expectation {
        case .typedError(let code):
            guard let error else { return problems.append("no error thrown") }
            if "\(error.code)" != code || error.errno != fault.errno {
                problems.append("threw \(error.code) errno \(error.errno ?? 0), expected \(code) errno \(fault.errno)")
            }
        case .transparent, .tolerated:
            if let error { problems.append("threw \(error)") }
        case .invalidated, .trap:
            if let error { problems.append("threw \(error)") }
        }
    }

    /// Counts the passes a loop makes that sleep and wake again.
    private final class PassCounter: Sendable {
        let wakeUps = Atomic<Int>(0)
        func observer() -> LoopObserver {
            LoopObserver(activities: .afterWaiting) { [self] _, _ in wakeUps.add(1, ordering: .relaxed) }
        }
    }

    /// Runs `loop` (the calling thread's) for 100 ms with only a far timer due: a loop that wakes more than a few
    /// times meanwhile is spinning on a report nobody handles.
    fileprivate static func checkNotSpinning(_ loop: Loop, _ problems: inout [String]) {
        let counter = PassCounter()
        let observer = counter.observer()
        let keepAlive = ItemsSupport.keepAlive()
        try! loop.add(observer)
        try! loop.add(keepAlive)
        loop.run(in: .default, for: .milliseconds(100))
        observer.invalidate()
        keepAlive.invalidate()
        let wakeUps = counter.wakeUps.load(ordering: .relaxed)
        if wakeUps > 5 { problems.append("the loop spun: \(wakeUps) wake-ups in an idle 100 ms") }
    }

    // MARK: Loop creation

    private static func loopCreation(_ fault: FaultCase, _ problems: inout [String]) {
        startThread(fault, options: .init(), &problems)
    }

    /// A stack size, the first CPU the process may use, and a policy: `SCHED_BATCH` where the worker sets it on
    /// itself (`sched_setscheduler`), else an explicit `SCHED_OTHER`, which the attributes carry. Neither needs a
    /// privilege.
    private static func loopThreadOptions(_ fault: FaultCase, _ problems: inout [String]) {
        let cpu = (try? ThreadCalls.currentAffinity().first) ?? 0
        let scheduling: LoopThread.Scheduling = fault.call == "sched_setscheduler" ? .batch : .other
        let threads = Reliability.threadCount()
        startThread(fault, options: .init(stackSize: 1 << 20, cpuAffinity: [cpu], scheduling: scheduling), &problems)
        if !waitUntil(timeout: .seconds(5), { Reliability.threadCount() == threads }) {
            problems.append("threads \(threads) before, \(Reliability.threadCount()) after")
        }
    }

    /// Starts a `LoopThread` with `options` under the fault, checks what it threw or that it works, stops it, and
    /// checks that the next one starts and works.
    private static func startThread(_ fault: FaultCase, options: LoopThread.Options, _ problems: inout [String]) {
        let outcome: Result<LoopThread, LoopError> = injecting(fault, &problems) {
            Result { () throws(LoopError) in try LoopThread(name: "fault-case", options: options) }
        }
        switch outcome {
        case .success(let thread):
            check(nil, fault, &problems)
            checkWorks(thread, &problems)
            thread.stop()
        case .failure(let error):
            check(error, fault, &problems)
        }
        // Nothing is left broken: the next thread starts and works.
        do {
            let thread = try LoopThread(name: "after-fault", options: options)
            checkWorks(thread, &problems)
            thread.stop()
        } catch {
            problems.append("a LoopThread after the fault failed: \(error)")
        }
    }

    private static func checkWorks(_ thread: LoopThread, _ problems: inout [String]) {
        let ran = Counter()
        guard thread.perform({ ran.increment() }) else { return problems.append("perform refused") }
        if !waitUntil({ ran.current == 1 }) { problems.append("an accepted block did not run") }
    }

    // MARK: Descriptor sources

    private static func descriptorAdd(_ fault: FaultCase, _ problems: inout [String]) {
        let local = Box<[String]>([])
        ItemsSupport.onLoopThread { loop in
            var found: [String] = []
            let pipe = Pipe()
            defer { pipe.close() }
            pipe.write()
            let calls = Counter()
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in calls.increment() }
            let error = injecting(fault, &found) { () -> LoopError? in
                do throws(LoopError) {
                    try loop.add(source)
                    return nil
                } catch {
                    return error
                }
            }
            check(error, fault, &found)
            if error != nil {
                if loop.contains(source) { found.append("a refused source is in the loop") }
                checkNotSpinning(loop, &found)
                try! loop.add(source)  // The same source can be added once the fault is gone.
            }
            ItemsSupport.run(loop, timeout: .seconds(5)) { calls.current > 0 }
            if calls.current == 0 { found.append("the source's handler never ran") }
            source.invalidate()
            local.value = found
        }
        problems += local.value!
    }

    /// Setting `events` (on the loop's thread or another), parking and unparking, with epoll_ctl(MOD) failing.
    private static func descriptorChange(_ fault: FaultCase, _ problems: inout [String]) {
        let other = Loop.Mode("fault-other")
        let pipe = Pipe()
        defer { pipe.close() }
        pipe.write()  // Readable from the start: a registration left behind would report on every pass.
        let calls = Counter()
        let sourceBox = Box<FileDescriptorSource>()
        let local = Box<[String]>([])
        let waitingForRemote = ItemsSupport.Flag()
        let remoteDone = ItemsSupport.Flag()
        let (_, thread) = startLoopThread { loop in
            var found: [String] = []
            let initial: FileDescriptorSource.Events = fault.scenario == .descriptorModify ? [] : .readable
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd, events: initial) { _, _ in
                calls.increment()
            }
            sourceBox.value = source
            switch fault.scenario {
            case .descriptorModify:
                try! loop.add(source)
                injecting(fault, &found) { source.events = .readable }  // On the loop's thread: applies at once.
            case .descriptorModifyFromAnotherThread:
                try! loop.add(source)
                source.events = []
                loop.run(in: .default, for: .zero)
                let keepAlive = ItemsSupport.keepAlive()
                try! loop.add(keepAlive)
                waitingForRemote.set()
                ItemsSupport.run(loop, timeout: .seconds(10)) { remoteDone.isSet }
                loop.run(in: .default, for: .zero)  // The pass that applies the change.
                keepAlive.invalidate()
            case .descriptorPark:
                try! loop.add(source, to: other)
                let keepAlive = ItemsSupport.keepAlive()
                try! loop.add(keepAlive)
                _ = injecting(fault, &found) { loop.run(in: .default, for: .zero) }  // Ready, but not in this mode.
                keepAlive.invalidate()
            default:  // .descriptorUnpark
                try! loop.add(source, to: other)
                let keepAlive = ItemsSupport.keepAlive()
                try! loop.add(keepAlive)
                loop.run(in: .default, for: .zero)  // Parked.
                keepAlive.invalidate()
                if !source.isParked { found.append("the source was not parked") }
                _ = injecting(fault, &found) { loop.run(in: other, for: .zero) }
            }
            checkDescriptorOutcome(source, fault, loop: loop, mode: fault.scenario.isParking ? other : .default, calls)
            { found.append($0) }
            local.value = found
        }
        if fault.scenario == .descriptorModifyFromAnotherThread {
            _ = waitUntil { waitingForRemote.isSet }
            injecting(fault, &problems) {
                sourceBox.value!.events = .readable
                sourceBox.value!.owner!.wakeUp()
                // The loop applies it in its next pass: wait until the source fails or reads.
                _ = waitUntil(timeout: .seconds(5)) { calls.current > 0 || !sourceBox.value!.isValid }
            }
            remoteDone.set()
            sourceBox.value!.owner?.wakeUp()
        }
        thread.join()
        problems += local.value!
    }

    fileprivate static func checkDescriptorOutcome(
        _ source: FileDescriptorSource,
        _ fault: FaultCase,
        loop: Loop,
        mode: Loop.Mode,
        _ calls: Counter,
        _ problem: (String) -> Void
    ) {
        switch fault.expectation {
        case .invalidated(let code):
            if source.isValid { problem("the source is still valid") }
            if let failure = source.failure {
                if "\(failure.code)" != code || failure.errno != fault.errno {
                    problem("failure \(failure.code) errno \(failure.errno ?? 0), expected \(code) \(fault.errno)")
                }
            } else {
                problem("no failure recorded")
            }
            // Nothing of it is left in the epoll set (a registration left behind reports level-triggered).
            var event = epoll_event()
            if epoll_ctl(loop.poller.epoll, EPOLL_CTL_MOD, source.descriptor, &event) == 0 {
                problem("the descriptor is still in the epoll set")
            }
            // Nothing keeps the run alive: it finishes at once.
            let result = loop.run(in: mode, for: .seconds(5))
            if result != .finished { problem("a run of its mode answered \(result), not finished") }
            var spin: [String] = []
            checkNotSpinning(loop, &spin)
            spin.forEach(problem)
        default:
            if !source.isValid || source.failure != nil {
                problem("the source failed: \(String(describing: source.failure))")
            }
            ItemsSupport.run(loop, in: mode, timeout: .seconds(5)) { calls.current > 0 }
            if calls.current == 0 { problem("the source's handler never ran") }
            source.invalidate()
        }
    }

    private static func descriptorRemove(_ fault: FaultCase, _ problems: inout [String]) {
        let local = Box<[String]>([])
        ItemsSupport.onLoopThread { loop in
            var found: [String] = []
            let pipe = Pipe()
            defer { pipe.close() }
            let source = try! FileDescriptorSource(descriptor: pipe.readEnd) { _, _ in }
            try! loop.add(source)
            injecting(fault, &found) { source.invalidate() }
            if source.isValid || loop.contains(source) { found.append("the source survived invalidate()") }
            if fault.expectation == .transparent {
                var event = epoll_event()
                if epoll_ctl(loop.poller.epoll, EPOLL_CTL_MOD, source.descriptor, &event) == 0 {
                    found.append("the descriptor is still in the epoll set")
                }
            }
            local.value = found
        }
        problems += local.value!
    }

    // MARK: Wake-ups, waits, timers

    private static func wakeUp(_ fault: FaultCase, _ problems: inout [String]) {
        let running = ItemsSupport.startRunningLoop()
        defer { running.finish() }
        _ = waitUntil { running.loop.isWaiting }
        let ran = Counter()
        let descriptor = running.loop.poller.wakeUpDescriptor
        if fault.scenario == .wakeUpRead {
            // The waker reads only a counter at its maximum, after 2^64 - 2 unread wake-ups: put it there.
            var count: UInt64 = 0
            _ = read(descriptor, &count, 8)
            // That write wakes the loop: wait until the pass it woke has ended and the loop sleeps again, or the
            // block below could find the loop awake, and its waker would neither write nor read.
            let passesBefore = running.loop.metrics.passes
            var maximum: UInt64 = .max - 1
            if write(descriptor, &maximum, 8) != 8 { problems.append("could not fill the eventfd: errno \(errno)") }
            _ = waitUntil { running.loop.metrics.passes > passesBefore && running.loop.isWaiting }
        }
        var scripted = fault.fault  // The write of a waker, or its read of a full counter.
        scripted.descriptor = descriptor
        let (accepted, counts) = FaultInjection.with([scripted]) { () -> Bool in
            let accepted = running.loop.perform { ran.increment() }
            _ = waitUntil(timeout: .seconds(5)) { ran.current == 1 }
            return accepted
        }
        if counts.first != fault.times { problems.append("fault hit \(counts.first ?? 0)×, scripted \(fault.times)×") }
        if !accepted { problems.append("perform refused") }
        // Exactly once: a second wake-up must not run it again.
        running.loop.wakeUp()
        _ = waitUntil { running.loop.isWaiting }
        if ran.current != 1 { problems.append("an accepted block ran \(ran.current)×") }
    }

    private static func waitAndTimer(_ fault: FaultCase, _ problems: inout [String]) {
        let local = Box<[String]>([])
        ItemsSupport.onLoopThread { loop in
            var found: [String] = []
            let fired = Counter()
            let timer = try! LoopTimer(after: .milliseconds(20)) { _ in fired.increment() }
            // First a run with nothing due for 100 ms: the loop certainly arms its timerfd and sleeps in epoll_wait
            // (a near timer could already be due by the first pass under a sanitizer, and then neither call is
            // made). Then the timer must fire.
            let far = ItemsSupport.keepAlive()
            injecting(fault, &found) {
                try! loop.add(far)
                loop.run(in: .default, for: .milliseconds(100))
                try! loop.add(timer)
                ItemsSupport.run(loop, timeout: .seconds(5)) { fired.current > 0 }
            }
            far.invalidate()
            if fired.current != 1 { found.append("the timer fired \(fired.current)×") }
            local.value = found
        }
        problems += local.value!
    }

    // MARK: Signals

    private static let signal = SIGUSR2

    private static func signalSourceCreate(_ fault: FaultCase, _ problems: inout [String]) {
        let outcome: Result<SignalSource, LoopError> = injecting(fault, &problems) {
            Result { () throws(LoopError) in try SignalSource(signal: signal) { _, _ in } }
        }
        switch outcome {
        case .success(let source):
            check(nil, fault, &problems)
            source.invalidate()
        case .failure(let error):
            check(error, fault, &problems)
            if SignalRelay.isInstalled(for: signal) { problems.append("the relay's handler stayed installed") }
        }
        checkSignalDelivered(&problems)
    }

    /// A source made now is told of a delivery.
    private static func checkSignalDelivered(_ problems: inout [String]) {
        let count = Counter()
        let source = try! SignalSource(signal: signal) { _, deliveries in
            for _ in 0..<deliveries { count.increment() }
        }
        let running = ItemsSupport.startRunningLoop { try! $0.add(source) }
        try! ProcessSignal.send(signal, to: getpid())
        if !waitUntil({ count.current == 1 }) { problems.append("a signal source after the fault heard nothing") }
        source.invalidate()
        running.finish()
    }

    private static func signalDelivery(_ fault: FaultCase, _ problems: inout [String]) {
        let count = Counter()
        let source = try! SignalSource(signal: signal) { _, deliveries in
            for _ in 0..<deliveries { count.increment() }
        }
        let running = ItemsSupport.startRunningLoop { try! $0.add(source) }
        var scripted = fault.fault
        if fault.scenario == .signalSourceRead { scripted.descriptor = source.watchedDescriptor }
        let (_, counts) = FaultInjection.with([scripted]) {
            try! ProcessSignal.send(signal, to: getpid())
            _ = waitUntil(timeout: fault.scenario == .signalRelayWrite ? .milliseconds(50) : .seconds(5)) {
                count.current == 1
            }
        }
        if counts.first != fault.times { problems.append("fault hit \(counts.first ?? 0)×, scripted \(fault.times)×") }
        // A second delivery: the first must not have been lost (a failed relay write is reported with it).
        try! ProcessSignal.send(signal, to: getpid())
        if !waitUntil({ count.current == 2 }) { problems.append("deliveries reported: \(count.current) of 2") }
        source.invalidate()
        running.finish()
    }

    // MARK: Child processes

    private static func spawnTrue() -> pid_t {
        var pid: pid_t = 0
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        defer { free(arguments[0]) }
        let status = posix_spawn(&pid, "/bin/true", nil, nil, arguments, environ)
        return status == 0 ? pid : -1
    }

    private static func childExit(_ fault: FaultCase, _ problems: inout [String]) {
        let pid = spawnTrue()
        guard pid > 0 else { return problems.append("posix_spawn failed") }
        defer {
            var status: CInt = 0
            _ = waitpid(pid, &status, WNOHANG)  // A zombie left by `reapedElsewhere` cases.
        }
        let heard = Box<ChildExitStatus>()
        let make = { () throws(LoopError) -> ChildExitSource in
            try ChildExitSource(pid: pid) { _, status in heard.value = status }
        }
        let source: ChildExitSource
        if fault.scenario == .childExitCreate {
            let outcome = injecting(fault, &problems) { Result(catching: make) }
            switch outcome {
            case .success(let made):
                check(nil, fault, &problems)
                source = made
            case .failure(let error):
                check(error, fault, &problems)
                source = try! make()
            }
            let running = ItemsSupport.startRunningLoop { try! $0.add(source) }
            if !waitUntil({ heard.value != nil }) { problems.append("the child's exit was not reported") }
            running.finish()
        } else {
            source = try! make()
            injecting(fault, &problems) {
                let running = ItemsSupport.startRunningLoop { try! $0.add(source) }
                _ = waitUntil { heard.value != nil }
                running.finish()
            }
            let expected: ChildExitStatus = fault.expectation == .tolerated ? .reapedElsewhere : .exited(code: 0)
            if heard.value != expected { problems.append("heard \(String(describing: heard.value)), not \(expected)") }
        }
    }
}

extension FaultScenarios {
    /// Two sources of one descriptor sharing its registration: the companion's add (epoll_ctl(ADD), `EEXIST`
    /// joins), the widening when the loop applies the join and the narrowing when one leaves (epoll_ctl(MOD)), and
    /// the last one's invalidation (epoll_ctl(DEL); the first one's deletes nothing).
    fileprivate static func sharedDescriptor(_ fault: FaultCase, _ problems: inout [String]) {
        let local = Box<[String]>([])
        ItemsSupport.onLoopThread { loop in
            var found: [String] = []
            let pipe = Pipe()
            defer { pipe.close() }
            let baseline = epollEntryCount(loop.poller.epoll)
            let calls = [Counter(), Counter()]
            // Each source, once told, watches nothing more: a shared registration both handled then stays quiet.
            let make = { (index: Int, events: FileDescriptorSource.Events) in
                try! FileDescriptorSource(descriptor: pipe.readEnd, events: events, order: index) { source, _ in
                    calls[index].increment()
                    source.events = []
                }
            }
            // The first watches writable, which a pipe's read end never is; the second readable.
            let first = make(0, fault.scenario == .descriptorSharedRemove ? .readable : .writable)
            let second = make(1, .readable)
            try! loop.add(first)
            let sharedEntries = { epollEntryCount(loop.poller.epoll) - baseline }
            switch fault.scenario {
            case .descriptorJoin:
                let error = injecting(fault, &found) { () -> LoopError? in
                    do throws(LoopError) {
                        try loop.add(second)
                        return nil
                    } catch {
                        return error
                    }
                }
                check(error, fault, &found)
                if error != nil {
                    if loop.contains(second) { found.append("a refused source is in the loop") }
                    if !first.isValid { found.append("the first source failed with the second's add") }
                    try! loop.add(second)  // The same source can be added once the fault is gone.
                }
                checkSharedWorks(loop, pipe, second, calls[1], sharedEntries, &found)
            case .descriptorJoinModify:
                injecting(fault, &found) { try! loop.add(second) }  // Joined on the loop's thread: at once.
                if case .invalidated = fault.expectation {
                    checkDescriptorOutcome(first, fault, loop: loop, mode: .default, calls[0]) { found.append($0) }
                    checkDescriptorOutcome(second, fault, loop: loop, mode: .default, calls[1]) { found.append($0) }
                } else {
                    checkSharedWorks(loop, pipe, second, calls[1], sharedEntries, &found)
                }
            case .descriptorLeaveModify:
                try! loop.add(second)
                injecting(fault, &found) { first.invalidate() }  // Narrows to readable, on the loop's thread.
                if case .invalidated = fault.expectation {
                    if first.failure != nil { found.append("the invalidated source got a failure") }
                    checkDescriptorOutcome(second, fault, loop: loop, mode: .default, calls[1]) { found.append($0) }
                } else {
                    checkSharedWorks(loop, pipe, second, calls[1], sharedEntries, &found)
                }
            default:  // .descriptorSharedRemove
                try! loop.add(second)
                first.invalidate()
                if sharedEntries() != 1 { found.append("the first invalidation took the shared entry out") }
                injecting(fault, &found) { second.invalidate() }
                if loop.contains(second) || second.isValid { found.append("the source survived invalidate()") }
                if fault.expectation == .transparent && sharedEntries() != 0 {
                    found.append("the descriptor is still in the epoll set")
                }
            }
            first.invalidate()
            second.invalidate()
            if fault.expectation == .transparent && sharedEntries() != 0 {
                found.append("\(sharedEntries()) entries left in the epoll set")
            }
            local.value = found
        }
        problems += local.value!
    }

    /// The shared registration has one entry, and `source` of it is told when the descriptor is ready.
    private static func checkSharedWorks(
        _ loop: Loop,
        _ pipe: Pipe,
        _ source: FileDescriptorSource,
        _ calls: Counter,
        _ sharedEntries: () -> Int,
        _ found: inout [String]
    ) {
        if !source.isValid || source.failure != nil {
            found.append("the source failed: \(String(describing: source.failure))")
            return
        }
        if sharedEntries() != 1 { found.append("\(sharedEntries()) entries for one shared descriptor") }
        pipe.write()
        ItemsSupport.run(loop, timeout: .seconds(5)) { calls.current > 0 }
        if calls.current == 0 { found.append("the source's handler never ran") }
        checkNotSpinning(loop, &found)
    }

    fileprivate static func threadName(_ fault: FaultCase, _ problems: inout [String]) {
        let thread = try! LoopThread(name: "fault-name")
        defer { thread.stop() }
        let name = injecting(fault, &problems) { ThreadIdentity.name(of: thread.threadID) }
        let expected = fault.expectation == .transparent ? "fault-name" : nil
        if name != expected { problems.append("the name read was \(String(describing: name))") }
    }

    /// `READY=1` to a stand-in socket: a typed error, or (retried) the message delivered.
    fileprivate static func serviceNotification(_ fault: FaultCase, _ problems: inout [String]) {
        let manager = NotifySocketStandIn()
        defer { manager.close() }
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": manager.address])
        let error = injecting(fault, &problems) { () -> LoopError? in
            do throws(LoopError) {
                try notifier.ready()
                return nil
            } catch {
                return error
            }
        }
        check(error, fault, &problems)
        let received = manager.receive(timeout: .milliseconds(error == nil ? 5_000 : 50))
        if (error == nil) != (received == "READY=1") {
            problems.append("delivered: \(String(describing: received)), error: \(String(describing: error))")
        }
    }
}

extension FaultCase.Scenario {
    /// Whether the scenario's source lives in a mode that is not the default one.
    var isParking: Bool { self == .descriptorPark || self == .descriptorUnpark }
}

// MARK: Services on descriptors

extension FaultScenarios {
    /// A file-change source made, watching a directory, in a loop on this thread: the case's call fails where its
    /// scenario makes it; afterwards a change made in the directory is still reported (unless the source could not
    /// be made), and the source's invalidation leaves no descriptor behind.
    fileprivate static func fileChange(_ fault: FaultCase, _ problems: inout [String]) {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let local = Box<[String]>([])
        ItemsSupport.onLoopThread { loop in
            var found: [String] = []
            let names = Recorder<String>()
            let make = { () throws(LoopError) in
                try FileChangeSource(order: 0) { _, change in names.append(change.name ?? "-") }
            }
            guard fault.scenario != .fileChangeCreate else {
                let made = injecting(fault, &found) { Result { () throws(LoopError) in try make() } }
                switch made {
                case .success(let source):
                    check(nil, fault, &found)
                    source.invalidate()
                case .failure(let error):
                    check(error, fault, &found)
                }
                local.value = found
                return
            }
            let source = try! make()
            try! loop.add(source)
            switch fault.scenario {
            case .fileChangeWatch:
                let error = injecting(fault, &found) { () -> LoopError? in
                    do throws(LoopError) {
                        try source.addWatch(directory.path, for: .created)
                        return nil
                    } catch {
                        return error
                    }
                }
                check(error, fault, &found)
                if error != nil {
                    if !source.watches.isEmpty { found.append("a refused watch is listed") }
                    try! source.addWatch(directory.path, for: .created)  // Once the fault is gone, it works.
                }
            case .fileChangeUnwatch:
                let dropped = try! source.addWatch(directory.path("."), for: .deleted)
                if fault.expectation == .trap { directory.remove() }  // The process ends in the call: no defer runs.
                injecting(fault, &found) { source.removeWatch(dropped) }
                if !source.watches.isEmpty { found.append("a removed watch is still listed") }
                try! source.addWatch(directory.path, for: .created)
            default:  // .fileChangeRead
                try! source.addWatch(directory.path, for: .created)
                directory.write("during")
                if fault.expectation == .trap { directory.remove() }  // The change stays queued; no defer runs.
                var scripted = fault.fault
                scripted.descriptor = source.inotifyDescriptor ?? -1
                let (_, counts) = FaultInjection.with([scripted]) {
                    loop.run(in: .default, for: .seconds(5), returnAfterSourceHandled: true)
                }
                if counts.first != fault.times {
                    found.append("fault hit \(counts.first ?? 0)×, scripted \(fault.times)×")
                }
            }
            directory.write("after")
            ItemsSupport.run(loop, timeout: .seconds(5)) { names.all.contains("after") }
            let expected = fault.scenario == .fileChangeRead ? ["during", "after"] : ["after"]
            if names.all != expected { found.append("changes reported: \(names.all), expected \(expected)") }
            checkNotSpinning(loop, &found)
            source.invalidate()
            local.value = found
        }
        problems += local.value!
    }

    /// A memory-pressure source made on this machine's pressure file: a typed error with the file closed, or a
    /// source that is added to a loop and invalidated. Where the kernel has no PSI there is no file to arm (a plain
    /// file is refused before any call the matrix scripts): nothing to play.
    fileprivate static func memoryPressure(_ fault: FaultCase, _ problems: inout [String]) {
        guard let path = MemoryPressureFile.preferredPath() else { return }
        let trigger = try! MemoryPressureTrigger(parsing: "some 150ms 2s")
        let made = injecting(fault, &problems) {
            Result { () throws(LoopError) in try MemoryPressureSource(trigger: trigger, path: path) { _, _ in } }
        }
        switch made {
        case .success(let source):
            check(nil, fault, &problems)
            let added = Box<Bool>()
            ItemsSupport.onLoopThread { loop in
                try! loop.add(source)
                added.value = loop.contains(source)
                source.invalidate()
            }
            if added.value != true { problems.append("the source is not in its loop") }
            source.invalidate()
        case .failure(let error):
            check(error, fault, &problems)
        }
    }
}
