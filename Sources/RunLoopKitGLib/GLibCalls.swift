import CRunLoopKitGLib
import RunLoopKit
import Synchronization

/// GLib calls with Swift closures, for the package's tests, demo and benchmark, which have no GLib bindings of their
/// own (an app has its GTK or GLib binding for these). Not API: package access only.
///
/// Each `add…` makes a source, gives it the closure, attaches it to `context` (`nil`: GLib's default context) and
/// answers it; the closure is released when GLib finalizes the source. Threading as in GLib: attaching is safe from
/// any thread, the closures run on the thread that iterates the context.
package struct GLibCalls: Sendable {
    package let functions: GLibFunctions

    /// GLib's calls, or why GLib cannot be used here.
    package init() throws(LoopError) {
        functions = try GLibFunctions.shared()
    }

    // MARK: Contexts and main loops

    /// A new context (`g_main_context_new`), with one reference for ``unref(context:)``.
    package func newContext() -> OpaquePointer { OpaquePointer(functions.mainContextNew()!) }

    /// Drops a reference to `context` (`g_main_context_unref`).
    package func unref(context: OpaquePointer) { functions.mainContextUnref(UnsafeMutableRawPointer(context)) }

    /// One iteration of `context` (`g_main_context_iteration`); answers whether a source was dispatched.
    @discardableResult
    package func iterate(_ context: OpaquePointer?, mayBlock: Bool) -> Bool {
        functions.mainContextIteration(context.map { UnsafeMutableRawPointer($0) }, mayBlock ? 1 : 0) != 0
    }

    /// A GLib main loop on `context` (`g_main_loop_new`), with one reference for ``unref(mainLoop:)``.
    package func newMainLoop(_ context: OpaquePointer?) -> OpaquePointer {
        OpaquePointer(functions.mainLoopNew(context.map { UnsafeMutableRawPointer($0) }, 0)!)
    }

    /// Runs `mainLoop` until ``quit(_:)`` (`g_main_loop_run`).
    package func run(_ mainLoop: OpaquePointer) { functions.mainLoopRun(UnsafeMutableRawPointer(mainLoop)) }

    /// Ends `mainLoop`'s run (`g_main_loop_quit`). Any thread.
    package func quit(_ mainLoop: OpaquePointer) { functions.mainLoopQuit(UnsafeMutableRawPointer(mainLoop)) }

    /// Drops a reference to `mainLoop` (`g_main_loop_unref`).
    package func unref(mainLoop: OpaquePointer) { functions.mainLoopUnref(UnsafeMutableRawPointer(mainLoop)) }

    /// GLib's monotonic clock, in microseconds (`g_get_monotonic_time`).
    package func monotonicMicroseconds() -> Int64 { functions.monotonicTime() }

    // MARK: Sources

    /// A timeout every `milliseconds` (`g_timeout_source_new`); `handler` answers whether it goes on.
    @discardableResult
    package func addTimeout(
        _ context: OpaquePointer?, milliseconds: UInt32, priority: Int32 = 0,
        _ handler: @escaping @Sendable () -> Bool
    ) -> GLibSourceReference {
        attach(functions.timeoutSourceNew(milliseconds)!, to: context, priority: priority, handler)
    }

    /// An idle source (`g_idle_source_new`), at `priority` (GLib's default for idles is 200).
    @discardableResult
    package func addIdle(
        _ context: OpaquePointer?, priority: Int32 = 200, _ handler: @escaping @Sendable () -> Bool
    ) -> GLibSourceReference {
        attach(functions.idleSourceNew()!, to: context, priority: priority, handler)
    }

    /// A child watch on `pid` (`g_child_watch_source_new`): `handler` gets the wait status once the child exits.
    @discardableResult
    package func addChildWatch(
        _ context: OpaquePointer?, pid: Int32, _ handler: @escaping @Sendable (Int32) -> Void
    ) -> GLibSourceReference {
        let source = functions.childWatchSourceNew(pid)!
        let box = Unmanaged.passRetained(ChildWatchClosure(handler)).toOpaque()
        let call: RLKGChildWatchFunc = { _, status, box in
            Unmanaged<ChildWatchClosure>.fromOpaque(box!).takeUnretainedValue().handler(status)
        }
        // GLib calls a child watch's callback with its own signature; g_source_set_callback takes it cast.
        functions.sourceSetCallback(source, unsafeBitCast(call, to: RLKGSourceFunc.self), box, releaseChildWatch)
        return attach(source, to: context, priority: 0)
    }

    /// A watch of `descriptor` for `condition` (GIOCondition bits: 1 in, 4 out) (`g_unix_fd_source_new`);
    /// `handler` gets the conditions that hold and answers whether it goes on.
    @discardableResult
    package func addDescriptorWatch(
        _ context: OpaquePointer?, descriptor: Int32, condition: UInt32,
        _ handler: @escaping @Sendable (UInt32) -> Bool
    ) -> GLibSourceReference {
        let source = functions.unixFDSourceNew(descriptor, condition)!
        let box = Unmanaged.passRetained(DescriptorClosure(handler)).toOpaque()
        let call: RLKGUnixFDSourceFunc = { _, condition, box in
            Unmanaged<DescriptorClosure>.fromOpaque(box!).takeUnretainedValue().handler(condition) ? 1 : 0
        }
        functions.sourceSetCallback(source, unsafeBitCast(call, to: RLKGSourceFunc.self), box, releaseDescriptor)
        return attach(source, to: context, priority: 0)
    }

    /// Runs `handler` once on the thread that iterates `context` (`g_main_context_invoke_full`): at once when that
    /// is the caller, else from an idle source GLib attaches and wakes the context for. Any thread.
    package func invoke(_ context: OpaquePointer?, priority: Int32 = 0, _ handler: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(
            SourceClosure {
                handler()
                return false
            }
        ).toOpaque()
        functions.mainContextInvokeFull(
            context.map { UnsafeMutableRawPointer($0) }, priority, callSource, box, releaseSource)
    }

    /// Gives `source` the closure `handler` (unless it has its callback already), attaches it and answers it.
    private func attach(
        _ source: UnsafeMutableRawPointer, to context: OpaquePointer?, priority: Int32,
        _ handler: (@Sendable () -> Bool)? = nil
    ) -> GLibSourceReference {
        if let handler {
            let box = Unmanaged.passRetained(SourceClosure(handler)).toOpaque()
            functions.sourceSetCallback(source, callSource, box, releaseSource)
        }
        functions.sourceSetPriority(source, priority)
        let target = functions.referencedContext(context)
        _ = functions.sourceAttach(source, target)
        functions.mainContextUnref(target)
        return GLibSourceReference(pointer: source, functions: functions)
    }
}

/// A GSource made by ``GLibCalls``, with the reference its maker holds. Package access only.
package struct GLibSourceReference: @unchecked Sendable {
    // Unchecked Sendable: a GSource pointer; GLib's source functions used here are thread-safe.
    let pointer: UnsafeMutableRawPointer
    let functions: GLibFunctions

    /// Removes the source from its context (`g_source_destroy`) and drops the reference. Any thread; once.
    package func destroy() {
        functions.sourceDestroy(pointer)
        functions.sourceUnref(pointer)
    }
}

/// A closure handed to GLib as a callback's data, which GLib passes to the thread that iterates the context under
/// its own locks. On Linux those are futexes, which ThreadSanitizer does not see, so the hand-over is published
/// through an atomic as well: a release store once the closure is stored, an acquire load before it is read. The
/// cost is one atomic each way, on paths that already take GLib's locks.
private final class HandedOver<Handler> {
    private let stored: Handler
    private let published = Atomic<Bool>(false)

    init(_ handler: Handler) {
        stored = handler
        published.store(true, ordering: .releasing)
    }

    /// The closure, read after the hand-over. Any thread.
    var handler: Handler {
        _ = published.load(ordering: .acquiring)
        return stored
    }
}

private typealias SourceClosure = HandedOver<@Sendable () -> Bool>
private typealias ChildWatchClosure = HandedOver<@Sendable (Int32) -> Void>
private typealias DescriptorClosure = HandedOver<@Sendable (UInt32) -> Bool>

private let callSource: RLKGSourceFunc = { box in
    Unmanaged<SourceClosure>.fromOpaque(box!).takeUnretainedValue().handler() ? 1 : 0
}
private let releaseSource: RLKGDestroyNotify = { box in Unmanaged<SourceClosure>.fromOpaque(box!).release() }
private let releaseChildWatch: RLKGDestroyNotify = { box in Unmanaged<ChildWatchClosure>.fromOpaque(box!).release() }
private let releaseDescriptor: RLKGDestroyNotify = { box in Unmanaged<DescriptorClosure>.fromOpaque(box!).release() }
