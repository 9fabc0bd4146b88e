import Glibc

/// The few GIO and GObject calls the driven scenario makes (an asynchronous file read), resolved at run time like
/// RunLoopKitGLib's own GLib calls: `libgio-2.0.so.0` ships with GLib's runtime package.
struct GIO: @unchecked Sendable {
    // Unchecked Sendable: immutable addresses of C functions.
    typealias FileNewForPath = @convention(c) (UnsafePointer<CChar>) -> UnsafeMutableRawPointer?
    typealias ReadyCallback =
        @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?)
        -> Void
    typealias LoadContentsAsync =
        @convention(c) (
            UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, ReadyCallback, UnsafeMutableRawPointer?
        ) -> Void
    typealias LoadContentsFinish =
        @convention(c) (
            UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
            UnsafeMutablePointer<Int>?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
            UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        ) -> Int32
    typealias Release = @convention(c) (UnsafeMutableRawPointer?) -> Void

    /// g_file_new_for_path
    let fileNewForPath: FileNewForPath
    /// g_file_load_contents_async
    let loadContentsAsync: LoadContentsAsync
    /// g_file_load_contents_finish
    let loadContentsFinish: LoadContentsFinish
    /// g_object_unref
    let objectUnref: Release
    /// g_free
    let free: Release

    init?() {
        guard let gio = dlopen("libgio-2.0.so.0", RTLD_NOW), let glib = dlopen("libglib-2.0.so.0", RTLD_NOW),
            let gobject = dlopen("libgobject-2.0.so.0", RTLD_NOW)
        else { return nil }
        func symbol<Function>(_ library: UnsafeMutableRawPointer, _ name: String) -> Function? {
            dlsym(library, name).map { unsafeBitCast($0, to: Function.self) }
        }
        guard let fileNewForPath: FileNewForPath = symbol(gio, "g_file_new_for_path"),
            let loadContentsAsync: LoadContentsAsync = symbol(gio, "g_file_load_contents_async"),
            let loadContentsFinish: LoadContentsFinish = symbol(gio, "g_file_load_contents_finish"),
            let objectUnref: Release = symbol(gobject, "g_object_unref"),
            let free: Release = symbol(glib, "g_free")
        else { return nil }
        self.fileNewForPath = fileNewForPath
        self.loadContentsAsync = loadContentsAsync
        self.loadContentsFinish = loadContentsFinish
        self.objectUnref = objectUnref
        self.free = free
    }
}
