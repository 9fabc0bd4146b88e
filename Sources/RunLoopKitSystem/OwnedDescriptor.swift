/// A descriptor closed when its last holder lets go: how a source that owns its descriptor keeps it open exactly as
/// long as the source, or work under way on its loop's thread (a handler reading it, a registration), may use it.
/// Any thread.
package final class OwnedDescriptor: Sendable {
    /// The descriptor; closed in `deinit`.
    package let descriptor: CInt

    /// Takes ownership of `descriptor`.
    package init(_ descriptor: CInt) {
        self.descriptor = descriptor
    }

    deinit {
        FileDescriptorCalls.close(descriptor)
    }
}
