import Glibc

/// The few GLib functions the GLib workloads (G1–G3) call themselves, declared here and looked up at run time.
///
/// The benchmark uses RunLoopKitGLib's public API for what the bridge does (`Loop.attachToGLib`), and GLib itself
/// for the rest: a context and a main loop for the target thread, `g_main_context_invoke_full` (G3, and the quit),
/// and a poll function that notes when GLib's wait returns. Like the bridge, it loads `libglib-2.0.so.0` with
/// `dlopen` when a GLib workload first runs, so building loop-bench needs no GLib; `dlopen` by soname answers the
/// copy already loaded, so the bridge and the benchmark call into one GLib.
///
/// The signatures are GLib 2's stable ABI on Linux (LP64), written from its reference documentation: `gboolean` and
/// `gint` are `Int32`, `guint` is `UInt32`, every object (GMainContext, GMainLoop) is an opaque pointer, and a
/// `GPollFD` (`gint fd; gushort events; gushort revents`) has `struct pollfd`'s layout, as GLib's Unix build itself
/// relies on when it hands its records to `poll(2)`.
struct GLib: @unchecked Sendable {
    // Unchecked Sendable: the addresses of C functions, set once; GLib's contexts and main loops are thread-safe.

    /// `GSourceFunc`: a callback with its user data; answers `G_SOURCE_CONTINUE` (1) or `G_SOURCE_REMOVE` (0).
    typealias SourceFunction = @convention(c) (UnsafeMutableRawPointer?) -> Int32
    /// `GDestroyNotify`: frees a callback's user data.
    typealias DestroyNotify = @convention(c) (UnsafeMutableRawPointer?) -> Void
    /// `GPollFunc`: what a context calls to wait, `poll(2)`'s signature.
    typealias PollFunction = @convention(c) (UnsafeMutablePointer<pollfd>?, UInt32, Int32) -> Int32

    /// `g_main_context_new()`: a new context, not the default one.
    let mainContextNew: @convention(c) () -> UnsafeMutableRawPointer?
    /// `g_main_context_invoke_full(context, priority, function, data, notify)`: runs `function` on the thread that
    /// owns `context` (from another thread: through an idle source and the context's wake-up).
    let mainContextInvokeFull:
        @convention(c) (UnsafeMutableRawPointer?, Int32, SourceFunction?, UnsafeMutableRawPointer?, DestroyNotify?) ->
            Void
    /// `g_main_context_set_poll_func(context, function)`: how `context` waits.
    let mainContextSetPollFunc: @convention(c) (UnsafeMutableRawPointer?, PollFunction?) -> Void
    /// `g_main_loop_new(context, is_running)`.
    let mainLoopNew: @convention(c) (UnsafeMutableRawPointer?, Int32) -> UnsafeMutableRawPointer?
    /// `g_main_loop_run(loop)`: iterates the loop's context until `g_main_loop_quit`.
    let mainLoopRun: @convention(c) (UnsafeMutableRawPointer?) -> Void
    /// `g_main_loop_quit(loop)`.
    let mainLoopQuit: @convention(c) (UnsafeMutableRawPointer?) -> Void

    /// The functions, resolved on first use and kept for the process; any thread.
    ///
    /// - Throws: ``BenchmarkFailure`` saying why when GLib cannot be loaded or lacks a function (the same each time).
    static func shared() throws(BenchmarkFailure) -> GLib { try resolved.get() }

    private static let resolved = Result { () throws(BenchmarkFailure) in try GLib(soname: "libglib-2.0.so.0") }

    private init(soname: String) throws(BenchmarkFailure) {
        // Kept open: the functions serve the rest of the process.
        guard let library = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "dlopen failed"
            throw BenchmarkFailure("cannot load GLib (\(reason)); on Debian: apt-get install libglib2.0-0")
        }
        func function<Function>(_ symbol: String) throws(BenchmarkFailure) -> Function {
            guard let address = dlsym(library, symbol) else {
                throw BenchmarkFailure("\(soname) has no \(symbol)")
            }
            return unsafeBitCast(address, to: Function.self)
        }
        mainContextNew = try function("g_main_context_new")
        mainContextInvokeFull = try function("g_main_context_invoke_full")
        mainContextSetPollFunc = try function("g_main_context_set_poll_func")
        mainLoopNew = try function("g_main_loop_new")
        mainLoopRun = try function("g_main_loop_run")
        mainLoopQuit = try function("g_main_loop_quit")
    }
}
