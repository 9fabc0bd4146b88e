import CRunLoopKitGLib
import Glibc
import RunLoopKit

/// GLib's functions, resolved once per process from `libglib-2.0.so.0` with `dlopen` and `dlsym`.
///
/// Why at run time rather than a system-library target found with pkg-config: SwiftPM builds every target of the
/// package on `swift build` and `swift test`, so such a target would make GLib's development headers a requirement
/// of building RunLoopKit at all, on every machine, GLib user or not. Resolving the few functions the bridge calls
/// when it is first used needs nothing at build time (CRunLoopKitGLib.h declares their signatures), adds no link
/// dependency, and turns a missing GLib into a ``RunLoopKit/LoopError`` for the one program that asked for it. A GTK
/// app has GLib loaded already: `dlopen` by soname then answers that same copy, so the bridge and the app share one GLib.
///
/// The package-level members beyond what the bridge needs (main loops, timeouts, idles, child watches, descriptor
/// sources, `g_main_context_invoke_full`, `g_main_context_set_poll_func`) serve the tests, the demo and loop-bench
/// (its GLib workloads G1-G3 call GLib directly, with no closure boxes on the measured path), which have no GLib
/// bindings of their own.
package struct GLibFunctions: @unchecked Sendable {
    // Unchecked Sendable: immutable addresses of C functions; GLib's own rules say which may be called where.

    /// The soname loaded: GLib 2's runtime library.
    package static let libraryName = "libglib-2.0.so.0"

    /// The process's table, loaded on first use. Any thread.
    /// - Throws: `libraryUnavailable` when GLib is not installed, `symbolMissing` when it is too old; the same error
    ///   on every call.
    package static func shared() throws(LoopError) -> GLibFunctions { try loaded.get() }

    private static let loaded = Result { () throws(LoopError) in try GLibFunctions(library: libraryName) }

    // The bridge's own.
    let mainContextDefault: RLKGContextFunction
    let mainContextRef: RLKGContextRefFunction
    let mainContextUnref: RLKGContextVoidFunction
    let mainContextAcquire: RLKGContextAcquireFunction
    let mainContextRelease: RLKGContextVoidFunction
    let mainContextPrepare: RLKGContextPrepareFunction
    let mainContextQuery: RLKGContextQueryFunction
    let mainContextCheck: RLKGContextCheckFunction
    let mainContextDispatch: RLKGContextVoidFunction
    let sourceNew: RLKGSourceNewFunction
    let sourceAddUnixFD: RLKGSourceAddUnixFDFunction
    let sourceAttach: RLKGSourceAttachFunction
    let sourceDestroy: RLKGSourceVoidFunction
    let sourceUnref: RLKGSourceVoidFunction
    let sourceSetPriority: RLKGSourceSetIntFunction
    let sourceSetCanRecurse: RLKGSourceSetIntFunction
    let sourceSetName: RLKGSourceSetNameFunction
    /// `g_main_depth`: how many dispatches of GLib's are in progress on the calling thread.
    let mainDepth: RLKGDepthFunction

    // For the tests, the demo and loop-bench.
    package let mainContextNew: RLKGContextFunction
    package let mainContextIteration: RLKGContextIterationFunction
    package let mainContextInvokeFull: RLKGContextInvokeFunction
    package let mainContextSetPollFunc: RLKGContextSetPollFunction
    package let sourceSetCallback: RLKGSourceSetCallbackFunction
    package let timeoutSourceNew: RLKGSourceNewUIntFunction
    package let idleSourceNew: RLKGSourceNewVoidFunction
    package let childWatchSourceNew: RLKGSourceNewIntFunction
    package let unixFDSourceNew: RLKGSourceNewFDFunction
    package let mainLoopNew: RLKGMainLoopNewFunction
    package let mainLoopRun: RLKGMainLoopVoidFunction
    package let mainLoopQuit: RLKGMainLoopVoidFunction
    package let mainLoopUnref: RLKGMainLoopVoidFunction
    package let monotonicTime: RLKGMonotonicTimeFunction

    /// Loads `library` and resolves every function. Tests pass other names to see the errors.
    init(library: String) throws(LoopError) {
        guard let handle = dlopen(library, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "no reason given"
            throw LoopError(
                .libraryUnavailable,
                message: "GLib is not available: dlopen(\"\(library)\") failed (\(reason)). Install GLib's runtime "
                    + "library: on Debian and Ubuntu, apt-get install libglib2.0-0")
        }
        // Never closed: the functions are used for the rest of the process (and a GTK app holds GLib anyway).
        let symbols = Symbols(handle: handle, library: library)
        mainContextDefault = try symbols.resolve("g_main_context_default")
        mainContextRef = try symbols.resolve("g_main_context_ref")
        mainContextUnref = try symbols.resolve("g_main_context_unref")
        mainContextAcquire = try symbols.resolve("g_main_context_acquire")
        mainContextRelease = try symbols.resolve("g_main_context_release")
        mainContextPrepare = try symbols.resolve("g_main_context_prepare")
        mainContextQuery = try symbols.resolve("g_main_context_query")
        mainContextCheck = try symbols.resolve("g_main_context_check")
        mainContextDispatch = try symbols.resolve("g_main_context_dispatch")
        sourceNew = try symbols.resolve("g_source_new")
        sourceAddUnixFD = try symbols.resolve("g_source_add_unix_fd")
        sourceAttach = try symbols.resolve("g_source_attach")
        sourceDestroy = try symbols.resolve("g_source_destroy")
        sourceUnref = try symbols.resolve("g_source_unref")
        sourceSetPriority = try symbols.resolve("g_source_set_priority")
        sourceSetCanRecurse = try symbols.resolve("g_source_set_can_recurse")
        sourceSetName = try symbols.resolve("g_source_set_name")
        mainDepth = try symbols.resolve("g_main_depth")
        mainContextNew = try symbols.resolve("g_main_context_new")
        mainContextIteration = try symbols.resolve("g_main_context_iteration")
        mainContextInvokeFull = try symbols.resolve("g_main_context_invoke_full")
        mainContextSetPollFunc = try symbols.resolve("g_main_context_set_poll_func")
        sourceSetCallback = try symbols.resolve("g_source_set_callback")
        timeoutSourceNew = try symbols.resolve("g_timeout_source_new")
        idleSourceNew = try symbols.resolve("g_idle_source_new")
        childWatchSourceNew = try symbols.resolve("g_child_watch_source_new")
        unixFDSourceNew = try symbols.resolve("g_unix_fd_source_new")
        mainLoopNew = try symbols.resolve("g_main_loop_new")
        mainLoopRun = try symbols.resolve("g_main_loop_run")
        mainLoopQuit = try symbols.resolve("g_main_loop_quit")
        mainLoopUnref = try symbols.resolve("g_main_loop_unref")
        monotonicTime = try symbols.resolve("g_get_monotonic_time")
    }

    /// `context`, or GLib's default context for `nil`, with a reference the caller must drop with
    /// ``mainContextUnref``.
    func referencedContext(_ context: OpaquePointer?) -> UnsafeMutableRawPointer {
        let pointer = context.map { UnsafeMutableRawPointer($0) } ?? mainContextDefault()!
        return mainContextRef(pointer)!
    }
}

/// Looks functions up in a library `dlopen` answered.
private struct Symbols {
    let handle: UnsafeMutableRawPointer
    let library: String

    /// The function `name` as the C function type `Function` (declared in CRunLoopKitGLib.h).
    func resolve<Function>(_ name: String) throws(LoopError) -> Function {
        guard let address = dlsym(handle, name) else {
            throw LoopError(
                .symbolMissing,
                message: "\(library) has no function \(name): RunLoopKitGLib needs GLib 2.36 or later")
        }
        return unsafeBitCast(address, to: Function.self)
    }
}
