import RunLoopKitSystem
import Synchronization

extension PhaseTaskScheduler {
    /// A task waiting for its phase in one of its modes.
    struct PendingTask {
        let phase: LoopPhase
        let modes: [Loop.Mode]
        let body: @Sendable () -> Void
    }

    /// The pending tasks, shared by the scheduler (any thread adds) and its observer (the loop's thread runs).
    ///
    /// Safe from any thread: the list is behind a mutex; tasks are taken out under it and run after it is released,
    /// so each runs exactly once and may schedule more.
    final class Queue: Sendable {
        /// Pending tasks, oldest first. Protected by the mutex.
        private let tasks = Locked<[PendingTask]>([])

        func append(_ task: PendingTask) {
            tasks.withLock { $0.append(task) }
        }

        /// Drops every pending task.
        func removeAll() {
            tasks.withLock { $0.removeAll() }
        }

        /// Handles one activity of `loop` (on its thread): runs the tasks due at it in the running mode.
        func handle(_ activity: Loop.Activity, on loop: Loop) {
            guard let mode = loop.currentMode else { return }
            let matcher = ModeMatcher(mode: mode, loop: loop)
            switch activity {
            case .afterWaiting:
                run(take(.nextPassBegins, matching: matcher))
            case .beforeWaiting:
                let ending = take(.currentPassEnds, matching: matcher)
                run(ending)
                if ending.isEmpty && !hasPending(.nextPassBegins, matching: matcher) {
                    run(take(.idle, matching: matcher))
                }
                // Tasks still due in this mode (added by the tasks above, or idle tasks held back) must not wait
                // for a wake-up that may never come: the loop goes round once more instead of sleeping.
                if hasPending(nil, matching: matcher) { loop.wakeUp() }
            case .exit:
                run(take(.currentPassEnds, matching: matcher))
                run(take(.idle, matching: matcher))
            default:
                break
            }
        }

        private func take(_ phase: LoopPhase, matching matcher: ModeMatcher) -> [PendingTask] {
            tasks.withLock { tasks in
                guard tasks.contains(where: { $0.phase == phase }) else { return [] }
                var taken: [PendingTask] = []
                var kept: [PendingTask] = []
                for task in tasks {
                    if task.phase == phase && matcher.matches(task.modes) {
                        taken.append(task)
                    } else {
                        kept.append(task)
                    }
                }
                tasks = kept
                return taken
            }
        }

        /// Whether a task for `phase` (any phase when `nil`) waits for the running mode.
        private func hasPending(_ phase: LoopPhase?, matching matcher: ModeMatcher) -> Bool {
            tasks.withLock { tasks in
                tasks.contains { task in (phase == nil || task.phase == phase) && matcher.matches(task.modes) }
            }
        }

        private func run(_ tasks: [PendingTask]) {
            for task in tasks { task.body() }
        }
    }

    /// Answers whether a task's modes include the running mode; reads the loop's common modes only when asked.
    struct ModeMatcher {
        let mode: Loop.Mode
        let loop: Loop

        func matches(_ modes: [Loop.Mode]) -> Bool {
            if modes.contains(mode) { return true }
            return modes.contains(.common) && loop.commonModes.contains(mode)
        }
    }
}
