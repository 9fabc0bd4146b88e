import Foundation
import Testing

/// Dispatch's main queue and the main actor on `Loop.main`: each scenario of the `main-loop-check` executable
/// runs in a child process, whose main thread is the real main thread (test functions never run there).
@Suite struct MainQueueTests {
    @Test func mainQueueWorkFromAnotherThreadWakesTheSleepingMainLoop() throws {
        let figures = try MainLoopCheck.run("wake")
        TestFigures.report("[main-loop-check] wake:\(figures)")
        // Generous: the figure itself goes in Docs; the test only rules out "woken by something else, later".
        #expect(try MainLoopCheck.value("wake_median_us", in: figures) < 100_000)
    }

    @Test func mainActorFunctionAwaitedFromADetachedTaskRunsOnTheMainLoop() throws {
        _ = try MainLoopCheck.run("main-actor")
    }

    @Test func nothingIsServedInAModeThatIsNotCommon() throws {
        _ = try MainLoopCheck.run("non-common-mode")
    }

    @Test func mainQueueWorkRunsInOrder() throws {
        _ = try MainLoopCheck.run("fifo")
    }

    @Test func hundredThousandItemsFromFourThreadsRunExactlyOnce() throws {
        _ = try MainLoopCheck.run("stress")
    }

    @Test func aRunNestedInMainQueueWorkDoesNotDrainItAgain() throws {
        _ = try MainLoopCheck.run("nested-run")
    }

    @Test func drainingTheMainQueueCountsAsAHandledSource() throws {
        _ = try MainLoopCheck.run("handled-source")
    }

    @Test func aScriptsMainRunEndsWhenItsItemsAreDoneIfTheMainQueueDoesNotKeepItAlive() throws {
        _ = try MainLoopCheck.run("script-ends")
    }

    @Test func aMainActorTaskStartedFromSynchronousMainRunsInsideTheMainLoop() throws {
        _ = try MainLoopCheck.run("main-task")
    }

    @Test func aHandlerOnTheMainLoopCanAssumeMainActorIsolation() throws {
        _ = try MainLoopCheck.run("assume-isolated")
    }

    @Test func theMainLoopCanIgnoreTheMainQueue() throws {
        _ = try MainLoopCheck.run("opt-out")
    }
}

/// Runs the `main-loop-check` test executable, built next to the test bundle.
enum MainLoopCheck {
    /// Runs `scenario` in a child process; answers the figures of its "PASS" line, throws on anything else.
    static func run(_ scenario: String) throws -> String {
        let (status, text) = try TestExecutable.run("main-loop-check", arguments: [scenario])
        let verdict = text.split(separator: "\n").last.map(String.init) ?? ""
        guard status == 0, verdict.hasPrefix("PASS \(scenario)") else {
            throw TestExecutable.Failure(description: "\(scenario): exit \(status), output:\n\(text)")
        }
        return String(verdict.dropFirst("PASS \(scenario)".count))
    }

    /// The number after `key=` in `figures`.
    static func value(_ key: String, in figures: String) throws -> Double {
        for field in figures.split(separator: " ") where field.hasPrefix("\(key)=") {
            if let number = Double(field.dropFirst(key.count + 1)) { return number }
        }
        throw TestExecutable.Failure(description: "no \(key) in \(figures)")
    }
}
