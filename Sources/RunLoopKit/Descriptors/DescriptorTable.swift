/// A loop's descriptor sources as its epoll set knows them. Loop thread only.
struct DescriptorTable {
    /// The registration (shared by the loop's sources watching it) of each descriptor number in the epoll set, as
    /// the loop's thread last learnt it (``Loop/enterWatch(_:)``).
    ///
    /// Unmanaged: a watch is here only while at least one source is in it, and each of those holds it
    /// (``DescriptorBackedSource/watch``), so a pass reads it without a retain and release per report (a single
    /// watcher's pass costs what it did before registrations were shared).
    var registered: [CInt: Unmanaged<DescriptorWatch>] = [:]
    /// Registrations narrowed because they reported what no source of them in the running mode watched
    /// (``Loop/park(_:claimed:)``), until a mode of theirs runs.
    var parked: [DescriptorWatch] = []
    /// Sources the loop invalidated because their descriptor failed (``DescriptorBackedSource/failure``), whose
    /// handlers are still to be told (``DescriptorBackedSource/Events/invalid``) in a pass of one of the modes they
    /// were in. Rare, so allocating here is fine.
    var failed: [(source: DescriptorBackedSource, modeIDs: [Int])] = []
    /// Whether a wait reported a descriptor source's readiness since ``Loop/runPass(in:)`` last looked: such a
    /// level-triggered entry stays ready in the epoll set while its handler left data unread, and a host waiting
    /// edge-triggered on the set would then never hear of it again.
    var reportedSinceHostPass = false
    /// How many times the loop rebuilt its epoll set to drop an entry it could not name
    /// (``Loop/dropStaleEntry(under:)``): for tests.
    var staleEntriesDropped = 0
}
