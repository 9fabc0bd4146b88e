import RunLoopKitSystem

/// A growable array of `Element` in one ``HeapBlock``: it doubles with `realloc`, which moves a large block's pages
/// instead of copying its bytes, so growing costs neither a copy of every element nor a fresh page fault for each
/// page already in use (`Array` does both at each doubling).
///
/// A class, so a table reaches its elements without the uniqueness check of a copy-on-write array; elements are
/// read and changed in place through the subscript. Indices are not bounds-checked in release builds: the owner
/// computes them (a heap's arithmetic, a slot number it handed out); debug builds check them. Elements must be bitwise movable, as every
/// Swift type without a raw layout is. Loop thread only, like its owner.
final class GrowingBuffer<Element> {
    /// Touched only by the owning loop's thread, and never while a method of this buffer is on the stack: no
    /// dynamic exclusivity check is needed.
    @exclusivity(unchecked) private var base: UnsafeMutablePointer<Element>?
    @exclusivity(unchecked) private(set) var count = 0
    @exclusivity(unchecked) private(set) var capacity = 0

    deinit {
        base?.deinitialize(count: count)
        HeapBlock.release(base)
    }

    /// The elements, for code that works on a buffer (``FourAryHeap``); valid until the next append or reserve.
    var elements: UnsafeMutableBufferPointer<Element> { UnsafeMutableBufferPointer(start: base, count: count) }

    subscript(index: Int) -> Element {
        @inline(__always) unsafeAddress {
            checkIndex(index)
            return UnsafePointer(base.unsafelyUnwrapped + index)
        }
        @inline(__always) unsafeMutableAddress {
            checkIndex(index)
            return base.unsafelyUnwrapped + index
        }
    }

    /// Adds `element` at the end, doubling the block when it is full.
    @inline(__always)
    func append(_ element: consuming Element) {
        if count == capacity { grow(to: Swift.max(16, capacity * 2)) }
        (base.unsafelyUnwrapped + count).initialize(to: element)
        count += 1
    }

    /// Takes the last element out (there must be one).
    @inline(__always)
    func removeLast() -> Element {
        checkIndex(count - 1)
        count -= 1
        return (base.unsafelyUnwrapped + count).move()
    }

    /// Destroys every element, keeping the block.
    func removeAll() {
        base?.deinitialize(count: count)
        count = 0
    }

    /// Makes the block hold at least `minimumCapacity` elements without growing again.
    func reserve(_ minimumCapacity: Int) {
        if minimumCapacity > capacity { grow(to: minimumCapacity) }
    }

    /// Traps on an index outside the elements, in debug builds (the tests' checks); nothing in release builds.
    @inline(__always)
    private func checkIndex(_ index: Int) {
        #if DEBUG
        require(index >= 0 && index < count, "GrowingBuffer index \(index) is outside 0..<\(count)")
        #endif
    }

    @inline(never)
    private func grow(to newCapacity: Int) {
        let bytes = newCapacity * MemoryLayout<Element>.stride
        base = HeapBlock.resize(base, to: bytes).bindMemory(to: Element.self, capacity: newCapacity)
        capacity = newCapacity
    }
}
