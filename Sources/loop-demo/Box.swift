import Synchronization

/// A value shared between a scenario and its callouts.
final class Box<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>

    init(_ value: Value) {
        storage = Mutex(value)
    }

    /// The current value.
    var value: Value { storage.withLock { $0 } }

    /// Changes the value under the lock.
    func update(_ change: (inout Value) -> Void) {
        storage.withLock { change(&$0) }
    }
}
