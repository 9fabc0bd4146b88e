import Glibc
import RunLoopKit
import RunLoopKitSystem

/// A file-change source's inotify descriptor and the buffer its records are read into: closed and freed together
/// when the last holder lets go.
///
/// The source holds it until invalidated; a delivery on the loop's thread holds it for as long as it reads, so an
/// invalidation from another thread (which takes the descriptor out of the epoll set first) closes the descriptor
/// only once no read can touch it. Closing it removes every watch.
///
/// Threading: ``descriptor`` from any thread; ``buffer`` on the owning loop's thread only (one delivery at a time:
/// a nested run never calls a handler that is already running).
final class InotifyInstance: @unchecked Sendable {  // Unchecked: `buffer` is confined to the loop's thread.
    /// How many bytes one read takes at most: about 500 records with short names, allocated once per source.
    static let bufferSize = 16 * 1024

    /// The inotify descriptor; closed in `deinit`.
    let descriptor: CInt
    /// Where records are read; reused by every delivery.
    let buffer: UnsafeMutableRawBufferPointer

    /// Takes ownership of `descriptor`.
    init(descriptor: CInt) {
        self.descriptor = descriptor
        buffer = .allocate(byteCount: Self.bufferSize, alignment: MemoryLayout<inotify_event>.alignment)
    }

    deinit {
        FileDescriptorCalls.close(descriptor)
        buffer.deallocate()
    }
}
