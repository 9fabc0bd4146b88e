import Glibc
import RunLoopKit
import RunLoopKitSystem

/// A pressure file's running averages: the share of time tasks were stalled on memory over the last 10, 60 and
/// 300 seconds, and the total stall time since boot (or since the cgroup was made). What
/// `cat /proc/pressure/memory` shows, parsed; cheap to read (one small file), handy to log next to a
/// ``MemoryPressureSource``'s firings. A value type: any thread.
public struct MemoryPressureAverages: Sendable, Hashable {
    /// One line of the file: averages in percent (0...100) and the total stall time.
    public struct Line: Sendable, Hashable {
        /// The share of the last 10 s, in percent.
        public let average10: Double
        /// The share of the last 60 s, in percent.
        public let average60: Double
        /// The share of the last 300 s, in percent.
        public let average300: Double
        /// The total stall time.
        public let total: Duration
    }

    /// Time in which at least one task was stalled.
    public let some: Line
    /// Time in which every non-idle task was stalled at once.
    public let full: Line

    /// Reads the averages of `path`, by default the file a ``MemoryPressureSource`` would arm its trigger on
    /// (``MemoryPressureSource/defaultPath()``). Any thread.
    /// - Throws: `LoopError.Code.unsupported` when there is no such file (no PSI);
    ///   `LoopError.Code.systemCallFailed` when it cannot be read, or reads as something else than PSI's format.
    public static func read(from path: String? = nil) throws(LoopError) -> MemoryPressureAverages {
        let file: String
        if let path {
            file = path
        } else {
            file = try MemoryPressureSource.defaultPath()
        }
        let bytes: [UInt8]
        do {
            bytes = try FileDescriptorCalls.contents(of: file)
        } catch {
            guard error.errno != ENOENT else {
                throw LoopError(.unsupported, errno: ENOENT, message: "no pressure stall information at \(file)")
            }
            throw LoopError(.systemCallFailed, errno: error.errno, message: "reading \(file): \(error)")
        }
        guard let averages = MemoryPressureAverages(parsing: String(decoding: bytes, as: UTF8.self)) else {
            throw LoopError(.systemCallFailed, message: "\(file) does not read as pressure stall information")
        }
        return averages
    }

    /// Parses a pressure file's two lines (`some avg10=0.00 avg60=0.00 avg300=0.00 total=0`, then `full …`).
    init?(parsing text: String) {
        var lines: [String: Line] = [:]
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard let kind = words.first else { continue }
            var values: [Substring: Substring] = [:]
            for word in words.dropFirst() {
                let parts = word.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { values[parts[0]] = parts[1] }
            }
            // Shares in percent and a count of microseconds, as the kernel writes them: nothing else is PSI.
            func share(_ key: Substring) -> Double? {
                guard let text = values[key], let value = Double(text), value >= 0, value <= 100 else { return nil }
                return value
            }
            guard let average10 = share("avg10"), let average60 = share("avg60"), let average300 = share("avg300"),
                let total = values["total"].flatMap({ Int64($0) }), total >= 0
            else { return nil }
            lines[String(kind)] = Line(
                average10: average10, average60: average60, average300: average300, total: .microseconds(total))
        }
        guard let some = lines["some"], let full = lines["full"] else { return nil }
        self.some = some
        self.full = full
    }
}
