import Glibc
import RunLoopKit
import RunLoopKitServices
import TestSupport
import Testing

/// The services' sources are items of one shape: each is a `DescriptorBackedSource`, taken by the loop's one
/// `add`/`remove`/`contains`, with the properties every descriptor-backed source has (order, keep-alive, rate limit,
/// failure, validity, invalidation). In an exit-test child: a signal source changes a process-wide disposition.
@Suite struct DescriptorBackedSourceShapeTests {
    @Test func everyServiceSourceHasTheSameShape() async {
        await #expect(processExitsWith: .success) {
            let directory = TemporaryDirectory()
            let child = ChildProcess.sleeping()
            var sources: [DescriptorBackedSource] = [
                try! SignalSource(signal: SIGUSR2, order: 3) { _, _ in },
                try! ChildExitSource(pid: child, order: 3) { _, _ in },
                try! FileChangeSource(watching: directory.path, order: 3) { _, _ in },
            ]
            // Where the kernel offers pressure stall information to this process (not every CI container does).
            let trigger = try! MemoryPressureTrigger(.some, threshold: .milliseconds(150), window: .seconds(2))
            if let pressure = try? MemoryPressureSource(trigger: trigger, order: 3, handler: { _, _ in }) {
                sources.append(pressure)
            }
            let all = sources
            ItemsSupport.onLoopThread { loop in
                for source in all {
                    let name = "\(type(of: source))"
                    SignalSupport.check(source.order == 3, "\(name): order \(source.order)")
                    SignalSupport.check(source.isValid && source.failure == nil, "\(name): not valid at first")
                    source.keepsRunAlive = false
                    source.rateLimit = try! RateLimit(burst: 10, per: .seconds(1))
                    try! loop.add(source, to: "shape")
                    SignalSupport.check(loop.contains(source, in: "shape"), "\(name): not in its mode")
                    SignalSupport.check(!source.keepsRunAlive && source.rateLimit != nil, "\(name): settings lost")
                    // Only items that keep runs alive count: none of these do.
                    SignalSupport.check(
                        loop.run(in: "shape", for: .seconds(5)) == .finished, "\(name): kept the run alive")
                    loop.remove(source, from: "shape")
                    SignalSupport.check(!loop.contains(source, in: "shape"), "\(name): still in its mode")
                    source.invalidate()
                    SignalSupport.check(!source.isValid, "\(name): valid after invalidate()")
                    do throws(LoopError) {
                        try loop.add(source)
                        SignalSupport.check(false, "\(name): an invalidated source was added")
                    } catch {
                        SignalSupport.check(error.code == .invalidated, "\(name): \(error)")
                    }
                }
            }
            ChildProcess.killAndReap(child)
        }
    }
}
