/// A loop's descriptor sources as its epoll set knows them. Loop thread only.
struct DescriptorTable {
    /// The source watching each descriptor in the epoll set, by descriptor number.
    var registered: [CInt: FileDescriptorSource] = [:]
    /// Sources whose reports are suspended because they were ready while none of their modes ran
    /// (``Loop/park(_:)``).
    var parked: [FileDescriptorSource] = []
    /// Sources the loop invalidated because their descriptor failed (``FileDescriptorSource/failure``), whose
    /// handlers are still to be told (``FileDescriptorSource/Events/invalid``) in a pass of one of the modes they
    /// were in. Rare, so allocating here is fine.
    var failed: [(source: FileDescriptorSource, modeIDs: [Int])] = []
}
