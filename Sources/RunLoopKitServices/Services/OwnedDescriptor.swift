import RunLoopKit
import RunLoopKitSystem
/// A descriptor closed when the last holder lets go: how a descriptor-backed service keeps its descriptor open
/// exactly as long as the service or a handler call under way on its loop's thread may use it. Any thread.
final class OwnedDescriptor: Sendable {
    /// The descriptor; closed in `deinit`.
    let descriptor: CInt

    /// Takes ownership of `descriptor`.
    init(_ descriptor: CInt) {
        self.descriptor = descriptor
    }

    deinit {
        FileDescriptorCalls.close(descriptor)
    }
}
