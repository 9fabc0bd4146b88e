import CRunLoopShims

/// Emptied arrays and queues a loop keeps for reuse, so that a pass allocates nothing once warmed up (a nested run
/// takes its own from the same pools). Loop thread only.
struct ScratchPools {
    /// Empty block queues, each usually keeping one segment (``Loop/takeBlockQueue()``).
    var blockQueues: [BlockQueue] = []
    var changes = ArrayPool<Inbox.Change>()
    var sources = ArrayPool<LoopSource>()
    /// Due timers of a pass, each retained while listed (``Loop/fireDueTimers()``).
    var timers = ArrayPool<Unmanaged<LoopTimer>>()
    var callbacks = ArrayPool<CallbackTimers.Entry>()
    var readyDescriptors = ArrayPool<(FileDescriptorSource, FileDescriptorSource.Events)>()
    /// One epoll event buffer per run depth, allocated on first use and freed with the loop.
    private(set) var eventBuffers: [UnsafeMutableBufferPointer<epoll_event>] = []

    /// How many events one `epoll_wait` takes at most.
    static let eventBufferCapacity = 64

    /// The event buffer of the run at `depth`, made on first use.
    @inline(__always)
    mutating func eventBuffer(depth: Int) -> UnsafeMutableBufferPointer<epoll_event> {
        if depth < eventBuffers.count { return eventBuffers[depth] }
        return makeEventBuffers(through: depth)
    }

    @inline(never)
    private mutating func makeEventBuffers(through depth: Int) -> UnsafeMutableBufferPointer<epoll_event> {
        while eventBuffers.count <= depth {
            let buffer = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: Self.eventBufferCapacity)
            buffer.initialize(repeating: epoll_event())
            eventBuffers.append(buffer)
        }
        return eventBuffers[depth]
    }

    /// Frees the event buffers; for the loop's `deinit`.
    func deallocateEventBuffers() {
        for buffer in eventBuffers { buffer.deallocate() }
    }
}

/// A stack of emptied arrays kept for reuse, so hot paths do not allocate once warmed up.
struct ArrayPool<Element> {
    private var free: [[Element]] = []

    mutating func take() -> [Element] {
        free.popLast() ?? []
    }

    mutating func give(_ array: inout [Element]) {
        array.removeAll(keepingCapacity: true)
        free.append(array)
        array = []
    }
}
