import Glibc

/// What glibc's malloc says about the heap, to tell a leak (bytes in use keep growing) from fragmentation (the
/// resident set grows while the bytes in use stay flat).
enum HeapFigures {
    private typealias MallocInfo = @convention(c) (CInt, UnsafeMutablePointer<FILE>?) -> CInt
    private typealias MallocTrim = @convention(c) (Int) -> CInt

    /// `malloc_info(3)`, which Swift's Glibc module leaves out: looked up once in the already loaded C library.
    private static let mallocInfo: MallocInfo? = {
        guard let address = dlsym(dlopen(nil, RTLD_NOW), "malloc_info") else { return nil }
        return unsafeBitCast(address, to: MallocInfo.self)
    }()

    /// `malloc_trim(3)`, likewise.
    private static let mallocTrim: MallocTrim? = {
        guard let address = dlsym(dlopen(nil, RTLD_NOW), "malloc_trim") else { return nil }
        return unsafeBitCast(address, to: MallocTrim.self)
    }()

    /// Whether glibc's per-thread cache (tcache) is off for this process (`GLIBC_TUNABLES` sets
    /// `glibc.malloc.tcache_count=0`): then no freed chunk is counted as in use, and ``inUseBytes()`` is the live heap.
    static let threadCacheIsOff: Bool = {
        guard let tunables = getenv("GLIBC_TUNABLES") else { return false }
        return String(cString: tunables).split(separator: ":").contains("glibc.malloc.tcache_count=0")
    }()

    /// Gives the free pages of every malloc arena back to the system (`malloc_trim(0)`): the resident set that is
    /// left is what the process uses, without the free memory malloc kept.
    static func trim() {
        _ = mallocTrim?(0)
    }

    /// Where `malloc_info` writes: one buffer and one stream, made once. A report for every arena is tens of KiB;
    /// reading it into a fresh string and splitting it into lines every second made large, short-lived allocations
    /// on the sampling thread, in the main arena, between the small long-lived ones other threads leave there.
    private nonisolated(unsafe) static let report:
        (buffer: UnsafeMutablePointer<CChar>?, stream: UnsafeMutablePointer<FILE>?) = {
            // Mapped here, not taken from malloc, so that the figures it holds do not count it.
            let capacity = 1 << 20
            let mapped = mmap(nil, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            guard let mapped, mapped != MAP_FAILED else { return (nil, nil) }
            let buffer = mapped.assumingMemoryBound(to: CChar.self)
            return (buffer, fmemopen(buffer, capacity, "w"))
        }()

    /// Bytes handed out by malloc and not freed, all arenas together: the memory malloc got from the system, less its
    /// free chunks (fast bins, other bins, top chunks), plus large blocks it mapped on their own. 0 when unknown.
    ///
    /// Read from the totals at the end of `malloc_info`'s XML (`<total type="fast|rest|mmap" size=…/>` and
    /// `<system type="current" size=…/>`), written to a buffer made once and read in place: taking a sample allocates
    /// nothing. Chunks cached in a thread's tcache count as in use, as malloc sees them. Main thread only.
    static func inUseBytes() -> Int {
        guard let mallocInfo, let buffer = report.buffer, let stream = report.stream else { return 0 }
        rewind(stream)
        _ = mallocInfo(0, stream)
        let length = ftell(stream)
        fflush(stream)
        guard length > 0 else { return 0 }
        let text = UnsafeBufferPointer(
            start: UnsafeRawPointer(buffer).assumingMemoryBound(to: UInt8.self),
            count: length)
        // The process totals follow the last `</heap>`; in them, the first of each kind is the one wanted.
        guard let lastHeap = lastOccurrence(of: heapEnd, in: text) else { return 0 }
        let totals = text[lastHeap...]
        guard let current = number(after: systemCurrent, in: totals) else { return 0 }
        let fast = number(after: totalFast, in: totals) ?? 0
        let rest = number(after: totalRest, in: totals) ?? 0
        let mapped = number(after: totalMmap, in: totals) ?? 0
        return current - fast - rest + mapped
    }

    /// Writes the whole report ``inUseBytes()`` last read (every arena's bins, sizes and totals) to `path`, for a
    /// look at which arena holds what (`--heap-reports`); answers whether it was written. Main thread only.
    @discardableResult
    static func writeLastReport(to path: String) -> Bool {
        guard let buffer = report.buffer, let stream = report.stream else { return false }
        let length = ftell(stream)
        guard length > 0 else { return false }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var written = 0
        while written < length {
            let count = write(descriptor, buffer + written, length - written)
            guard count > 0 else { return false }
            written += count
        }
        return true
    }

    private static let heapEnd = Array("</heap>".utf8)
    private static let systemCurrent = Array("<system type=\"current\" ".utf8)
    private static let totalFast = Array("<total type=\"fast\" count=\"".utf8)
    private static let totalRest = Array("<total type=\"rest\" count=\"".utf8)
    private static let totalMmap = Array("<total type=\"mmap\" count=\"".utf8)

    /// Where `pattern` last starts in `text`.
    private static func lastOccurrence(of pattern: [UInt8], in text: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = text.count - pattern.count
        while index >= 0 {
            if matches(pattern, in: text[...], at: index) { return index }
            index -= 1
        }
        return nil
    }

    /// The `size="N"` value of the first element that starts with `prefix` in `text`.
    private static func number(after prefix: [UInt8], in text: Slice<UnsafeBufferPointer<UInt8>>) -> Int? {
        var index = text.startIndex
        while index + prefix.count <= text.endIndex {
            if matches(prefix, in: text, at: index) {
                // The element reads `... size="N"/>`: the digits after the next `size="`.
                var cursor = index + prefix.count
                while cursor + 6 <= text.endIndex && !matches(sizeAttribute, in: text, at: cursor) { cursor += 1 }
                cursor += 6
                var value = 0
                var digits = 0
                while cursor < text.endIndex, text[cursor] >= UInt8(ascii: "0"), text[cursor] <= UInt8(ascii: "9") {
                    value = value * 10 + Int(text[cursor] - UInt8(ascii: "0"))
                    cursor += 1
                    digits += 1
                }
                return digits > 0 ? value : nil
            }
            index += 1
        }
        return nil
    }

    private static let sizeAttribute = Array("size=\"".utf8)

    /// Whether `pattern` starts at `index` of `text`.
    private static func matches(_ pattern: [UInt8], in text: Slice<UnsafeBufferPointer<UInt8>>, at index: Int) -> Bool {
        guard index >= text.startIndex, index + pattern.count <= text.endIndex else { return false }
        for offset in 0..<pattern.count where text[index + offset] != pattern[offset] { return false }
        return true
    }
}
