/// A loop's descriptor sources as its epoll set knows them. Loop thread only.
struct DescriptorTable {
    /// The source watching each descriptor in the epoll set, by descriptor number.
    var registered: [CInt: FileDescriptorSource] = [:]
    /// Sources whose reports are suspended because they were ready while none of their modes ran
    /// (``Loop/park(_:)``).
    var parked: [FileDescriptorSource] = []
}
