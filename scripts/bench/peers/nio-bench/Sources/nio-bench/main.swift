// nio-bench [--callbacks] W1|W2|W3|W4|W5 [--quick]: the shared workloads on SwiftNIO 2.101's event loops.
//
// A loop is the one thread of a `MultiThreadedEventLoopGroup(numberOfThreads: 1)`. Posting is
// `EventLoop.execute`. Timers are `scheduleTask(deadline:)` cancelled with `Scheduled.cancel()` (peer `nio`), or
// with `--callbacks` `scheduleCallback(at:handler:)` cancelled with `NIOScheduledCallback.cancel()` (peer `nio-cb`).
// `NIODeadline` counts `CLOCK_MONOTONIC` nanoseconds on Linux, the clock the workloads stamp with.
import Glibc
import NIOCore
import NIOPosix
import PeerSupport

/// Loops are single-thread groups, kept alive until the process exits.
nonisolated(unsafe) var groups: [MultiThreadedEventLoopGroup] = []

func startEventLoop() -> any EventLoop {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    groups.append(group)
    let loop = group.next()
    try! loop.submit {}.wait()  // The thread is up and running its loop.
    return loop
}

/// Peer `nio`: `scheduleTask` timers.
struct TaskTimers: PeerRuntime {
    func startLoop() -> any EventLoop { startEventLoop() }

    func post(to loop: any EventLoop, _ body: @escaping @Sendable () -> Void) {
        loop.execute(body)
    }

    func schedule(on loop: any EventLoop, at deadline: Int64, log: FireLog, index: Int) -> Scheduled<Void> {
        loop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(deadline))) { log.fire(index) }
    }

    func cancel(_ timer: Scheduled<Void>, on loop: any EventLoop) {
        timer.cancel()
    }
}

/// Peer `nio-cb`: `scheduleCallback` timers; posting as `nio`.
struct CallbackTimers: PeerRuntime {
    /// The handler of one timer.
    struct Fire: NIOScheduledCallbackHandler, Sendable {
        let log: FireLog
        let index: Int

        func handleScheduledCallback(eventLoop: some EventLoop) {
            log.fire(index)
        }
    }

    func startLoop() -> any EventLoop { startEventLoop() }

    func post(to loop: any EventLoop, _ body: @escaping @Sendable () -> Void) {
        loop.execute(body)
    }

    func schedule(on loop: any EventLoop, at deadline: Int64, log: FireLog, index: Int) -> NIOScheduledCallback {
        try! loop.scheduleCallback(at: .uptimeNanoseconds(UInt64(deadline)), handler: Fire(log: log, index: index))
    }

    func cancel(_ timer: NIOScheduledCallback, on loop: any EventLoop) {
        timer.cancel()
    }
}

var arguments = Array(CommandLine.arguments.dropFirst())
if let flag = arguments.firstIndex(of: "--callbacks") {
    arguments.remove(at: flag)
    PeerBench.main(runtime: CallbackTimers(), name: "nio-cb", arguments: arguments)
} else {
    PeerBench.main(runtime: TaskTimers(), name: "nio", arguments: arguments)
}
