import RunLoopKitSystem

// MARK: package seam (the bridges: RunLoopKitGLib, RunLoopKitFoundation; see Loop+PackageSeam.swift)

/// At most one valid bridge of a kind per loop, for the bridge products (GLib's attachment and driver, Foundation's
/// bridge): a second one would serve every pass twice, so it is refused. Loops whose threads exited keep no slot
/// (nor their `Loop` object). Any thread.
package final class LoopBridgeSlots<Bridge: AnyObject & Sendable>: Sendable {
    /// What ``claim(_:make:)`` found.
    package enum Claim {
        /// The slot was free: `make` made this bridge, now recorded.
        case made(Bridge)
        /// A valid bridge holds the slot already; `make` was not called.
        case taken(by: Bridge)
    }

    private let isValid: @Sendable (Bridge) -> Bool
    private let slots = Locked<[ObjectIdentifier: (loop: Loop, bridge: Bridge)]>([:])

    /// Slots whose bridges hold them while `isValid` says so.
    package init(isValid: @escaping @Sendable (Bridge) -> Bool) {
        self.isValid = isValid
    }

    /// Makes and records `loop`'s bridge with `make` unless a valid one holds the slot. `make` runs holding the lock,
    /// so two threads bridging one loop at once cannot both succeed.
    package func claim<Failure: Error>(_ loop: Loop, make: () throws(Failure) -> Bridge) throws(Failure) -> Claim {
        try slots.withLock { (slots) throws(Failure) -> Claim in
            slots = slots.filter { !$0.value.loop.isTerminated && isValid($0.value.bridge) }
            if let holder = slots[ObjectIdentifier(loop)] { return .taken(by: holder.bridge) }
            let bridge = try make()
            slots[ObjectIdentifier(loop)] = (loop, bridge)
            return .made(bridge)
        }
    }

    /// Frees `loop`'s slot if `bridge` holds it (after the bridge's `invalidate()`).
    package func release(_ bridge: Bridge, of loop: Loop) {
        slots.withLock { slots in
            if slots[ObjectIdentifier(loop)]?.bridge === bridge { slots[ObjectIdentifier(loop)] = nil }
        }
    }
}
