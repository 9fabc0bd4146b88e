import RunLoopKitSystem
import SplitMix64
import Synchronization

/// The thread that drives one kind of traffic: it registers with the run's ``RunControl``, then plays rounds, one
/// per checkpoint, until the run ends. Each round gets its number (from 1) and the driver's own random stream.
///
/// Threading: ``start(_:control:seed:round:finally:)`` once, then ``join()`` from any thread.
final class DriverThread: Sendable {
    private let thread = Mutex<JoinableThread?>(nil)

    /// Starts driver `name`: `round(number, &random)` between checkpoints, then `finally` once the run ends.
    func start(
        _ name: String, control: RunControl, seed: UInt64,
        round: @escaping @Sendable (Int, inout SplitMix64) -> Void, finally: @escaping @Sendable () -> Void = {}
    ) {
        control.register(name)
        thread.withLock {
            $0 = JoinableThread(name: name) {
                var random = SplitMix64(seed: seed)
                var number = 0
                while control.checkpoint(name) {
                    number += 1
                    round(number, &random)
                }
                finally()
            }
        }
    }

    /// Waits for the driver's thread to end (once its ``RunControl`` stopped it).
    func join() {
        thread.withLock { $0 }?.join()
    }
}
