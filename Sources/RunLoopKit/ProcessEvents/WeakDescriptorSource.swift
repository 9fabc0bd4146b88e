/// A descriptor source held weakly: how a composite item (``SignalSource``, ``ChildExitSource``) refers to the
/// descriptor source its loop owns, without a reference cycle through that source's handler.
struct WeakDescriptorSource: Sendable {
    weak var source: FileDescriptorSource?
}
