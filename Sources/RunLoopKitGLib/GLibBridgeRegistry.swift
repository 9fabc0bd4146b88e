import RunLoopKit
import RunLoopKitSystem

/// The valid attachment and the valid driver of each loop, so a second ``RunLoopKit/Loop/attachToGLib(context:mode:priority:)``
/// or ``RunLoopKit/Loop/driveGLib(context:mode:)`` is refused with ``GLibError/Code/alreadyBridged`` rather than
/// running every pass twice or iterating a context twice. Any thread.
enum GLibBridgeRegistry {
    /// A loop's valid bridges of one kind.
    private struct Entries<Bridge: AnyObject & Sendable>: Sendable {
        var byLoop: [ObjectIdentifier: (loop: Loop, bridge: Bridge)] = [:]
    }

    private static let attachments = Locked(Entries<GLibAttachment>())
    private static let drivers = Locked(Entries<GLibDriver>())

    /// Records `make()`'s attachment for `loop`, unless a valid one is recorded: then throws, naming it.
    static func attach(
        _ loop: Loop, isValid: (GLibAttachment) -> Bool, make: () throws(GLibError) -> GLibAttachment
    ) throws(GLibError) -> GLibAttachment {
        try record(loop, in: attachments, kind: "attached to a GLib main context", isValid: isValid, make: make)
    }

    /// Records `make()`'s driver for `loop`, unless a valid one is recorded: then throws, naming it.
    static func drive(
        _ loop: Loop, isValid: (GLibDriver) -> Bool, make: () throws(GLibError) -> GLibDriver
    ) throws(GLibError) -> GLibDriver {
        try record(loop, in: drivers, kind: "drives a GLib main context", isValid: isValid, make: make)
    }

    /// Forgets `attachment` (after its `invalidate()`).
    static func forget(_ attachment: GLibAttachment) { forget(attachment, of: attachment.loop, in: attachments) }

    /// Forgets `driver` (after its `invalidate()`).
    static func forget(_ driver: GLibDriver) { forget(driver, of: driver.loop, in: drivers) }

    private static func record<Bridge: AnyObject & Sendable>(
        _ loop: Loop, in table: Locked<Entries<Bridge>>, kind: String, isValid: (Bridge) -> Bool,
        make: () throws(GLibError) -> Bridge
    ) throws(GLibError) -> Bridge {
        // Held while making the bridge, so two threads attaching one loop at once cannot both succeed.
        let outcome: Result<Bridge, GLibError> = table.withLock { entries in
            // Loops whose threads exited keep no entry (nor their Loop object) alive.
            entries.byLoop = entries.byLoop.filter { !$0.value.loop.isTerminated && isValid($0.value.bridge) }
            if entries.byLoop[ObjectIdentifier(loop)] != nil {
                return .failure(
                    GLibError(
                        .alreadyBridged,
                        message: "\(loop) \(kind) already; invalidate that bridge first (a second would serve "
                            + "every pass twice)"))
            }
            do throws(GLibError) {
                let bridge = try make()
                entries.byLoop[ObjectIdentifier(loop)] = (loop, bridge)
                return .success(bridge)
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    private static func forget<Bridge: AnyObject & Sendable>(
        _ bridge: Bridge, of loop: Loop, in table: Locked<Entries<Bridge>>
    ) {
        table.withLock { entries in
            if entries.byLoop[ObjectIdentifier(loop)]?.bridge === bridge {
                entries.byLoop[ObjectIdentifier(loop)] = nil
            }
        }
    }
}
