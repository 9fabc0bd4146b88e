import RunLoopKit
import RunLoopKitSystem

/// systemd's memory-pressure convention: a unit with `MemoryPressureWatch=` gets `MEMORY_PRESSURE_WATCH` (the
/// pressure file to watch, or a notifier's FIFO or socket; `/dev/null` when watching is off) and `MEMORY_PRESSURE_WRITE` (the trigger to write to it,
/// base64-encoded), set from `MemoryPressureThresholdSec=`. Reads the two variables; knows nothing of loops.
enum MemoryPressureWatch {
    /// What the service manager asked for: the file and the trigger text, or `nil` when it set nothing.
    struct Request: Equatable {
        var path: String
        /// The decoded `MEMORY_PRESSURE_WRITE` as text, without the NUL systemd ends it with; `nil` when the variable
        /// is absent (the caller's trigger is written then).
        var trigger: String?
        /// The decoded bytes as the service manager wrote them (with systemd's trailing NUL when it is there): what a
        /// notifier socket is sent, as sd-event sends it. `nil` when the variable is absent.
        var bytes: [UInt8]? = nil
    }

    /// The request in `environment` (`nil`: the process's), or `nil` when `MEMORY_PRESSURE_WATCH` is absent.
    /// - Throws: `LoopError.Code.unsupported` when it is empty or `/dev/null` (the unit turned watching off);
    ///   `LoopError.Code.invalidArgument` when it is not a normalized absolute path, or `MEMORY_PRESSURE_WRITE` is not base64
    ///   of UTF-8 text, optionally ended by one NUL.
    ///
    /// systemd encodes the trigger *with* its C string's NUL (`base64mem(b, strlen(b) + 1, …)` in
    /// src/core/execute.c: `c29tZSAyMDAwMDAgMjAwMDAwMAA=` is `"some 200000 2000000\0"`), and sd-event writes the
    /// decoded bytes as they are, NUL included. One NUL at the end is therefore accepted and is not part of the
    /// text. A NUL anywhere else is refused: the kernel reads a pressure file's trigger as a C string and would
    /// silently arm only the part before it, so what was armed would not be what the variable says.
    static func request(in environment: [String: String]?) throws(LoopError) -> Request? {
        func variable(_ name: String) -> String? {
            environment.map { $0[name] } ?? ProcessEnvironment.value(name)
        }
        guard let path = variable("MEMORY_PRESSURE_WATCH") else { return nil }
        guard !path.isEmpty, path != "/dev/null" else {
            throw LoopError(
                .unsupported,
                message: "the service manager turned memory-pressure watching off (MEMORY_PRESSURE_WATCH=\(path))")
        }
        guard isNormalizedAbsolutePath(path) else {
            throw LoopError(
                .invalidArgument, message: "MEMORY_PRESSURE_WATCH=\(path) is not a normalized absolute path")
        }
        guard let encoded = variable("MEMORY_PRESSURE_WRITE"), !encoded.isEmpty else {
            return Request(path: path, trigger: nil)
        }
        guard let bytes = decodeBase64(encoded), let text = trigger(in: bytes) else {
            throw LoopError(
                .invalidArgument,
                message: "MEMORY_PRESSURE_WRITE \"\(encoded)\" is not base64-encoded text (a NUL may only end it)")
        }
        return Request(path: path, trigger: text, bytes: bytes)
    }

    /// Whether `path` is what sd-event accepts in `MEMORY_PRESSURE_WATCH` (`path_is_absolute` and
    /// `path_is_normalized`): absolute, no `.` or `..` component, no `//`, no NUL, and no longer than `PATH_MAX`.
    static func isNormalizedAbsolutePath(_ path: String) -> Bool {
        let slash = UInt8(ascii: "/")
        let dot = UInt8(ascii: ".")
        let bytes = Array(path.utf8)
        guard bytes.first == slash, bytes.count < 4096, !bytes.contains(0) else { return false }
        let components = bytes.dropFirst().split(separator: slash, omittingEmptySubsequences: false)
        for (index, component) in components.enumerated() {
            // An empty component is a "//", unless it is the end of a trailing slash.
            if component.isEmpty && index != components.count - 1 { return false }
            if component.elementsEqual([dot]) || component.elementsEqual([dot, dot]) { return false }
        }
        return true
    }

    /// The text of decoded `MEMORY_PRESSURE_WRITE` bytes: UTF-8, with at most one NUL, at the end (systemd's form),
    /// which is dropped; `nil` for anything else.
    static func trigger(in bytes: [UInt8]) -> String? {
        let text = bytes.last == 0 ? bytes.dropLast() : bytes[...]
        guard !text.contains(0) else { return nil }
        return String(validating: text, as: UTF8.self)
    }

    /// The bytes of standard base64 `text` (padding optional), or `nil` for anything else.
    static func decodeBase64(_ text: String) -> [UInt8]? {
        var bits: UInt32 = 0
        var count = 0
        var bytes: [UInt8] = []
        var padding = 0
        for character in text.utf8 {
            let value: UInt32
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(character - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(character - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(character - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="):
                padding += 1
                continue
            default: return nil
            }
            guard padding == 0 else { return nil }  // Nothing after the padding.
            bits = bits << 6 | value
            count += 6
            if count >= 8 {
                count -= 8
                bytes.append(UInt8(truncatingIfNeeded: bits >> UInt32(count)))
            }
        }
        // Leftover bits must be the zero filler of a partial group, and padding at most two characters.
        guard padding <= 2, count < 6, bits & ((1 << UInt32(count)) - 1) == 0 else { return nil }
        return bytes
    }
}
