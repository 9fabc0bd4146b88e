import RunLoopKit
import RunLoopKitSystem

/// The bridge of each bridged loop, so a second ``RunLoopKit/Loop/bridgeToFoundation(mode:)`` is refused rather than
/// running every pass twice. It also keeps each bridge alive until ``FoundationBridge/invalidate()``. Any thread.
enum FoundationBridgeRegistry {
    private static let bridges = Locked<[ObjectIdentifier: FoundationBridge]>([:])

    /// Records `bridge` for its loop; answers the bridge already recorded instead, if any (then nothing changes).
    static func insert(_ bridge: FoundationBridge) -> FoundationBridge? {
        bridges.withLock { bridges in
            // Loops whose threads exited keep no entry (nor their Loop object) alive.
            bridges = bridges.filter { $0.value.isValid && !$0.value.loop.isTerminated }
            let key = ObjectIdentifier(bridge.loop)
            if let existing = bridges[key] { return existing }
            bridges[key] = bridge
            return nil
        }
    }

    /// Forgets `bridge`, if it is the one recorded for its loop.
    static func remove(_ bridge: FoundationBridge) {
        bridges.withLock { bridges in
            let key = ObjectIdentifier(bridge.loop)
            if bridges[key] === bridge { bridges[key] = nil }
        }
    }
}
