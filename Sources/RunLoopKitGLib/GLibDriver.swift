import CRunLoopKitGLib
import RunLoopKit
import RunLoopKitSystem
import Synchronization

/// A GLib main context driven by a loop: GLib's timeouts, idles, descriptor watches, child watches and GIO's
/// asynchronous calls run in the loop's passes, on the loop's thread, at GLib's rates and priorities. Made by
/// ``RunLoopKit/Loop/driveGLib(context:mode:)``.
///
/// One GLib iteration is `prepare`, `query`, poll, `check`, `dispatch`. The driver splits it around the loop's own
/// sleep, with three items in `mode`:
/// - an observer at `Loop.Activity.beforeWaiting`, called after every other observer of that activity,
///   prepares and queries: at the last moment before the loop sleeps, so that a GLib source added by the pass's own
///   handlers (`g_idle_add` on the thread that owns the context wakes nothing) is in the set the loop sleeps on;
/// - GLib's descriptors, in an epoll set of the driver's own that the loop watches, and
/// - a timer at GLib's timeout (now, when a source is ready already) wake the loop; either one then checks,
///   with the readiness of GLib's descriptors read at that moment, dispatches, and prepares the next iteration at
///   once.
///
/// A pass that does not sleep (work was ready already) skips `beforeWaiting`, and a loop kept busy may not sleep for
/// a long time: the same observer, at `Loop.Activity.beforeTimers`, prepares again when the previous pass
/// did not sleep and the last preparation is over a millisecond old. A busy loop so still sees a GLib source its own
/// handlers added within about a millisecond, and GLib's timeouts keep their rate.
///
/// None of the three keeps a run going (they are like a loop's observers): a run of the loop ends as it would
/// without GLib. Run `Loop.main` with `run()`, which the main queue keeps going until stopped.
///
/// Threading: ``isValid`` is safe from any thread; ``invalidate()`` is for the loop's thread only, which owns the
/// context (it acquired it) while the driver is valid.
public final class GLibDriver: @unchecked Sendable {
    // Unchecked Sendable: everything mutable is confined to the loop's thread (the items' handlers run there and
    // `invalidate()` checks it); `valid` is atomic.

    /// The loop that drives the context.
    public let loop: Loop
    /// The mode the driver's items are in: GLib is served while the loop runs it (every common mode for
    /// `Loop.Mode.common`).
    public let mode: Loop.Mode

    private let glib: GLibFunctions
    /// The context, referenced and acquired by this thread until the driver is invalidated.
    private let context: UnsafeMutableRawPointer
    private let valid = Atomic<Bool>(true)

    // Loop thread only.
    private var pollSet: GLibPollSet?
    private var observer: LoopObserver?
    private var alarm: LoopTimer?
    /// GLib's poll records of the prepared iteration (`g_main_context_query` fills them).
    private var records: UnsafeMutablePointer<RLKGPollFD>
    private var capacity = 16
    private var recordCount = 0
    /// The priority `g_main_context_prepare` answered, which query and check take.
    private var maxPriority: Int32 = 0
    /// An iteration is prepared and queried, so it can be checked.
    private var isPrepared = false
    /// Where ``alarm`` is set, in monotonic nanoseconds (`Int64.max`: not set).
    private var alarmTime = Int64.max
    /// How many dispatches are running (a GLib callback may run the loop again): teardown waits for the outermost.
    private var dispatchDepth = 0
    /// When the last iteration was prepared, in monotonic nanoseconds.
    private var preparedAt: Int64 = 0
    /// The loop slept since the last ``RunLoopKit/Loop/Activity/beforeTimers`` (its `afterWaiting` came).
    private var slept = false
    /// The loop's own source in the context: a GLib main loop nested in a GLib callback or in a handler of the loop
    /// (a modal dialog, a "process pending events" loop) iterates the context itself, and this source then runs the
    /// loop's passes inside it, as ``RunLoopKit/Loop/attachToGLib(context:mode:priority:)`` would. Inert in the
    /// driver's own iterations. The driver's own, or for a driver an attachment starts for a nested run, that
    /// attachment.
    private var nestedLoopSource: GLibAttachment?
    /// Whether ``nestedLoopSource`` is the driver's own, to invalidate with it.
    private let ownsNestedLoopSource: Bool
    /// `g_main_depth()` while the driver prepares, checks or dispatches an iteration of its own, `-1` otherwise: an
    /// iteration at that depth is the driver's (a nested GLib loop iterates deeper, inside a dispatch).
    private let ownIterationDepth = Atomic<Int32>(-1)

    /// How old a preparation may get while the loop keeps busy: 1 ms.
    private static let busyPreparationAge: Int64 = 1_000_000
    /// GLib's unit of timeout, in nanoseconds.
    private static let millisecond: Int64 = 1_000_000

    /// A driver of `context` for `loop`, acquiring the context. `attachment`: the loop is attached to `context`
    /// already, and the driver serves a run of the loop nested in GLib's dispatch; the attachment then plays the part
    /// of the driver's own source in the context (see ``nestedLoopSource``).
    init(
        loop: Loop, context: OpaquePointer?, mode: Loop.Mode, glib: GLibFunctions,
        nestedIn attachment: GLibAttachment? = nil
    ) throws(LoopError) {
        self.loop = loop
        self.mode = mode
        self.glib = glib
        nestedLoopSource = attachment
        ownsNestedLoopSource = attachment == nil
        self.context = glib.referencedContext(context)
        records = .allocate(capacity: capacity)
        guard glib.mainContextAcquire(self.context) != 0 else {
            glib.mainContextUnref(self.context)
            throw LoopError(
                .contextOwnedElsewhere,
                message: "the GMainContext is acquired by another thread (a GLib main loop runs there); only one "
                    + "thread can iterate a context")
        }
        do {
            try start()
        } catch {
            teardown()
            throw error
        }
    }

    /// Makes and adds the three items, then prepares the first iteration: GLib work ready already (or any other
    /// thread's) is served by the loop's next pass, with no call to prime it.
    private func start() throws(LoopError) {
        pollSet = try GLibPollSet(loop: loop, mode: mode) { [self] in iterate() }
        // Called after every other observer of the same activity: `order` is the largest there is.
        let observer = LoopObserver(activities: [.beforeTimers, .beforeWaiting, .afterWaiting], order: .max) {
            [self] _, activity in
            observe(activity)
        }
        self.observer = observer
        // A timer that never fires by itself (it repeats every 16 years), moved to each GLib timeout: unlike a
        // one-shot timer it stays valid after firing, so the next `setNextFireTime(_:)` re-arms it.
        let far = Loop.Instant.now + LoopTimer.maximumInterval
        let alarm: LoopTimer
        alarm = try LoopTimer(at: far, repeating: LoopTimer.maximumInterval) { [self] _ in
            alarmTime = .max
            iterate()
        }
        alarm.keepsRunAlive = false
        self.alarm = alarm
        try loop.add(observer, to: mode)
        try loop.add(alarm, to: mode)
        if ownsNestedLoopSource {
            nestedLoopSource = GLibAttachment(
                loop: loop, context: OpaquePointer(context), mode: mode, priority: 0, glib: glib
            ) { [weak self] in
                self?.isIteratingAtCurrentDepth ?? true
            }
        }
        prepare()
    }

    /// Whether the loop's pass in progress is one a nested GLib loop runs (through ``nestedLoopSource``): the driver
    /// then leaves GLib alone (it is iterating itself, further out) and empties its set, whose ready descriptors would
    /// otherwise keep the loop's descriptor readable and ask the nested loop for pass after pass.
    private var isInsideNestedGLibLoop: Bool {
        guard let nestedLoopSource, nestedLoopSource.hostPassDepth >= 0 else { return false }
        return loop.runDepth <= nestedLoopSource.hostPassDepth
    }

    /// Whether GLib's iteration in progress is the driver's own: a source of the loop in the context must then neither
    /// ask for nor run a pass (the loop runs already, further out). Any thread (atomic; answers `false` elsewhere
    /// than the context's thread, whose depth is 0 there).
    var isIteratingAtCurrentDepth: Bool {
        ownIterationDepth.load(ordering: .relaxed) == glib.mainDepth()
    }

    /// Runs `body` (a step of the driver's own iteration) marked as the driver's, at GLib's current depth.
    private func asOwnIteration<Result>(_ body: () -> Result) -> Result {
        let outer = ownIterationDepth.load(ordering: .relaxed)
        ownIterationDepth.store(glib.mainDepth(), ordering: .relaxed)
        defer { ownIterationDepth.store(outer, ordering: .relaxed) }
        return body()
    }

    /// The driver of each driving loop: one at a time.
    static let slots = LoopBridgeSlots<GLibDriver> { $0.isValid }

    /// Whether the driver still drives its context. Safe from any thread.
    public var isValid: Bool { valid.load(ordering: .relaxed) }

    /// Stops driving the context for good: removes the driver's items from the loop and releases the context, which
    /// another thread may then acquire and iterate. Loop thread only (traps elsewhere); once done, later calls do
    /// nothing.
    ///
    /// From inside a GLib callback the driver dispatched, the context is released when that dispatch returns.
    public func invalidate() {
        require(
            loop.isCurrent,
            "RunLoopKitGLib: GLibDriver.invalidate() must be called on the thread of the loop that drives the context")
        guard valid.exchange(false, ordering: .relaxed) else { return }
        Self.slots.release(self, of: loop)
        if dispatchDepth == 0 { teardown() }
    }

    deinit {
        // Only an invalidated driver can go: the loop's items hold it while it is valid.
        records.deallocate()
    }

    // MARK: The iteration

    /// The observer's call: prepare before the loop sleeps, or at the start of a pass when the loop has been busy.
    private func observe(_ activity: Loop.Activity) {
        switch activity {
        case .beforeWaiting:
            prepare()
        case .afterWaiting:
            slept = true
        default:  // beforeTimers
            if slept {
                slept = false  // Woken: the alarm or GLib's descriptors say whether GLib has anything.
            } else if Loop.Instant.now.nanoseconds - preparedAt > Self.busyPreparationAge {
                prepare()
            }
        }
    }

    /// Prepares and queries an iteration, watches its descriptors and sets the alarm to its timeout (to now when a
    /// source is ready already, or a descriptor cannot be watched and `poll(2)` would call it ready at once).
    private func prepare() {
        guard isValid, let pollSet else { return }
        if isInsideNestedGLibLoop {
            standAside(pollSet)
            return
        }
        var priority: Int32 = 0
        var timeout: Int32 = -1
        var ready = false
        var count = 0
        asOwnIteration {
            ready = glib.mainContextPrepare(context, &priority) != 0
            count = Int(glib.mainContextQuery(context, priority, &timeout, records, Int32(capacity)))
            while count > capacity {
                // More descriptors than records: GLib answered how many it needs; ask again with room for them.
                records.deallocate()
                capacity = count * 2
                records = .allocate(capacity: capacity)
                count = Int(glib.mainContextQuery(context, priority, &timeout, records, Int32(capacity)))
            }
        }
        recordCount = count
        maxPriority = priority
        isPrepared = true
        pollSet.update(records, count: count)
        let now = Loop.Instant.now.nanoseconds
        preparedAt = now
        if ready || timeout == 0 || pollSet.hasReadyRefusal {
            moveAlarm(to: now, now: now)  // A due timer makes the pass poll rather than sleep, and fires in it.
        } else if timeout < 0 {
            moveAlarm(to: .max, now: now)
        } else {
            moveAlarm(to: now + Int64(timeout) * 1_000_000, now: now)
        }
    }

    /// Checks the prepared iteration with its descriptors' readiness as it is now, dispatches what is ready, and
    /// prepares the next one. Called by the poll set's source and by the alarm.
    private func iterate() {
        guard isValid else { return }
        if isInsideNestedGLibLoop, let pollSet {
            standAside(pollSet)
            return
        }
        if isPrepared, let pollSet {
            isPrepared = false
            pollSet.collect(into: records, count: recordCount)
            if asOwnIteration({ glib.mainContextCheck(context, maxPriority, records, Int32(recordCount)) }) != 0 {
                dispatchDepth += 1
                asOwnIteration { glib.mainContextDispatch(context) }
                dispatchDepth -= 1
                guard isValid else {
                    if dispatchDepth == 0 { teardown() }  // A callback invalidated the driver.
                    return
                }
            }
        }
        prepare()
    }

    /// Leaves the iteration to the nested GLib loop that runs the loop's pass: forgets the prepared iteration and
    /// empties the set, so GLib's descriptors wake only that loop. The driver's next preparation of its own, once the
    /// nested loop is over, fills it again.
    private func standAside(_ pollSet: GLibPollSet) {
        isPrepared = false
        recordCount = 0
        pollSet.update(records, count: 0)
        moveAlarm(to: .max, now: Loop.Instant.now.nanoseconds)
    }

    /// Moves the alarm to `time` (monotonic nanoseconds; `Int64.max`: never), unless it is there already, or it is
    /// pending less than a millisecond earlier.
    ///
    /// GLib answers its timeout in whole milliseconds, rounded up from the deadline of its most urgent source, so
    /// each preparation answers that same deadline up to a millisecond late, from wherever in the millisecond it
    /// happens to run; the driver prepares several times per iteration. Taking each answer would push the alarm
    /// later every time, and a 10 ms GLib timeout would tick some 91 times a second instead of GLib's own ~92 (with
    /// another timer in its poll set). The earlier answer is no earlier than the deadline either. Should the deadline
    /// itself have moved later, the alarm comes up to a millisecond early: GLib's check finds nothing due, and the
    /// preparation that follows sets the alarm anew.
    private func moveAlarm(to time: Int64, now: Int64) {
        guard time != alarmTime, let alarm else { return }
        if time > alarmTime && alarmTime > now && time - alarmTime < Self.millisecond { return }
        alarmTime = time
        alarm.setNextFireTime(time == .max ? .now + LoopTimer.maximumInterval : Loop.Instant(nanoseconds: time))
    }

    /// Removes the items, closes the poll set and releases the context. Once, on the loop's thread.
    private func teardown() {
        if ownsNestedLoopSource { nestedLoopSource?.invalidate() }
        nestedLoopSource = nil
        observer?.invalidate()
        alarm?.invalidate()
        pollSet?.close()
        observer = nil
        alarm = nil
        pollSet = nil
        glib.mainContextRelease(context)
        glib.mainContextUnref(context)
    }
}
