/// Ends the process for a programming error or a broken invariant, printing `message` to standard error in every
/// build configuration.
///
/// `precondition` and `preconditionFailure` print nothing under `-O`: a release program would die with `SIGILL` and
/// an empty standard error. `fatalError` prints its message in debug and release builds alike, so every trap of the
/// library goes through it, here. Package-wide, so the opt-in products trap the same way.
@inline(never)
public func trap(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError(message, file: file, line: line)
}

/// Traps with `message` (see ``trap(_:file:line:)``) unless `condition` holds: `precondition`, with a message that
/// survives release builds. The condition is tested inline; the message is built only when it fails.
@inlinable @inline(__always)
public func require(
    _ condition: @autoclosure () -> Bool,
    _ message: @autoclosure () -> String,
    file: StaticString = #fileID,
    line: UInt = #line
) {
    if !condition() { trap(message(), file: file, line: line) }
}
