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

    /// Bytes handed out by malloc and not freed, all arenas together: the memory malloc got from the system, less its
    /// free chunks (fast bins, other bins, top chunks), plus large blocks it mapped on their own. 0 when unknown.
    ///
    /// Read from the totals at the end of `malloc_info`'s XML (`<total type="fast|rest|mmap" size=…/>` and
    /// `<system type="current" size=…/>`). Chunks cached in a thread's tcache count as in use, as malloc sees them.
    static func inUseBytes() -> Int {
        guard let mallocInfo else { return 0 }
        var buffer: UnsafeMutablePointer<CChar>? = nil
        var size = 0
        guard let stream = open_memstream(&buffer, &size) else { return 0 }
        _ = mallocInfo(0, stream)
        fclose(stream)
        guard let buffer else { return 0 }
        defer { free(buffer) }
        let lines = String(cString: buffer).split(separator: "\n")
        // The process totals follow the last `</heap>`.
        guard let lastHeap = lines.lastIndex(of: "</heap>") else { return 0 }
        var totals: [String: Int] = [:]
        for line in lines[lastHeap...] {
            guard let type = value(of: "type", in: line), let bytes = value(of: "size", in: line).flatMap(Int.init)
            else { continue }
            let key = line.hasPrefix("<system") ? "system-\(type)" : type
            if totals[key] == nil { totals[key] = bytes }
        }
        guard let current = totals["system-current"] else { return 0 }
        return current - (totals["fast"] ?? 0) - (totals["rest"] ?? 0) + (totals["mmap"] ?? 0)
    }

    /// The value of attribute `name` in an XML element written on one line.
    private static func value(of name: String, in line: Substring) -> String? {
        guard let start = line.firstRange(of: " \(name)=\"") else { return nil }
        return String(line[start.upperBound...].prefix { $0 != "\"" })
    }
}
