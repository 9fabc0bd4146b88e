import RunLoopKit

/// The codes only the GLib bridge throws. Its other failures are the core's codes: `invalidMode` for
/// `Loop.Mode.common`, `alreadyBridged` for a second attachment or driver, `loopTerminated` when the loop's thread
/// has exited, and the core's own error when the loop refuses the bridge's items or a system call fails.
extension LoopError.Code {
    /// GLib's runtime library, `libglib-2.0.so.0`, could not be loaded: GLib is not installed (on Debian and Ubuntu
    /// it is the package `libglib2.0-0`). Thrown by the first bridge call of the process, on any thread.
    public static let libraryUnavailable = Self("libraryUnavailable")
    /// GLib was loaded but lacks a function the bridge calls (a GLib older than 2.36).
    public static let symbolMissing = Self("symbolMissing")
    /// The `GMainContext` is acquired by another thread (it runs a GLib main loop there), so this thread cannot
    /// drive it.
    public static let contextOwnedElsewhere = Self("contextOwnedElsewhere")
}
