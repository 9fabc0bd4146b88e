import CRunLoopShims

/// Emptied arrays and queues a loop keeps for reuse, so that a pass allocates nothing once warmed up (a nested run
/// takes its own from the same pools). Loop thread only.
struct ScratchPools {
    /// Empty block queues, each usually keeping one segment (``Loop/takeBlockQueue()``).
    var blockQueues = BlockQueuePool()
    var changes = ArrayPool<Inbox.Change>()
    var sources = ArrayPool<LoopSource>()
    /// Due timers and callbacks of a pass, in firing order; each timer retained while listed
    /// (``Loop/fireDueTimers()``).
    var timers = ArrayPool<TimerEntry>()
    var readyDescriptors = ArrayPool<(DescriptorBackedSource, DescriptorBackedSource.Events)>()
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

/// Emptied block queues kept for reuse, each usually keeping one segment. Every pass that runs blocks takes one and
/// gives one back (``Loop/runBlocks()``), so the first lives in a slot of its own: taking and giving it moves two
/// references, where an array's `popLast` and `append` check its buffer's uniqueness and capacity. Nested runs use
/// the rest. Loop thread only.
struct BlockQueuePool {
    private var spare: BlockQueue?
    private var more: [BlockQueue] = []

    /// How many queues `more` keeps; further ones give their segment back to the segment pool.
    private static let moreLimit = 3

    /// An empty queue, the kept one if there is one.
    @inline(__always)
    mutating func take() -> BlockQueue {
        if let queue = spare.take() { return queue }
        return more.popLast() ?? BlockQueue()
    }

    /// Keeps the empty `queue` (leaving `queue` an empty queue without segment), or hands its segment to `pool`
    /// when enough are kept.
    @inline(__always)
    mutating func give(_ queue: inout BlockQueue, pool: BlockSegmentPool) {
        if spare == nil {
            spare = consume queue
        } else if more.count < Self.moreLimit {
            more.append(consume queue)
        } else {
            queue.releaseSegment(to: pool)
        }
        queue = BlockQueue()
    }
}
