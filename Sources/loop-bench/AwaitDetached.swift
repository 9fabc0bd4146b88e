/// Runs `body` in a detached task (preferring `executor`, if any) and waits on the calling thread for its answer:
/// how a benchmark's synchronous `run()` times async code. A body that throws, or one not done within 300 s, fails
/// the run, named by `workload`.
func awaitDetached<Value: Sendable>(
    _ workload: String,
    preferring executor: (any TaskExecutor)? = nil,
    _ body: @escaping @Sendable () async throws -> Value
) throws -> Value {
    let answer = DetachedAnswer<Value>()
    Task.detached(executorPreference: executor) {
        do {
            answer.result = .success(try await body())
        } catch {
            answer.result = .failure(BenchmarkFailure("\(workload): \(error)"))
        }
        answer.done.increment()
    }
    guard answer.done.wait(), let result = answer.result else {
        throw BenchmarkFailure("\(workload): a variant did not finish within 300 s")
    }
    return try result.get()
}

/// A detached task's answer: written before `done` is incremented and read after it, which orders them.
private final class DetachedAnswer<Value: Sendable>: @unchecked Sendable {
    var result: Result<Value, BenchmarkFailure>?
    let done = WaitCounter()
}
