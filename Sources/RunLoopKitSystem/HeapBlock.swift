import Glibc

/// A block of memory from the C allocator that can grow where it is: `realloc(3)` and `free(3)`.
///
/// Why not `UnsafeMutablePointer.allocate`: growing such a block means allocating a larger one, copying every byte
/// and touching every page of the copy. glibc's `realloc` grows a large block (one it placed with `mmap`, from
/// 128 KiB up) with `mremap(2)`, which moves its pages rather than their bytes: no copy, and no page faulted in
/// twice. Loop-thread tables that grow while the loop works use it (``GrowingBuffer``).
package enum HeapBlock {
    /// `block` (or a new block, for `nil`) resized to `bytes`, its first bytes kept; the old address is invalid
    /// afterwards. Traps when memory is exhausted, as Swift's own allocations do.
    package static func resize(_ block: UnsafeMutableRawPointer?, to bytes: Int) -> UnsafeMutableRawPointer {
        guard let resized = realloc(block, bytes) else {
            trap("RunLoopKit: realloc of \(bytes) bytes failed (out of memory)")
        }
        return resized
    }

    /// Gives `block` back to the allocator; `nil` does nothing.
    package static func release(_ block: UnsafeMutableRawPointer?) {
        free(block)
    }
}
