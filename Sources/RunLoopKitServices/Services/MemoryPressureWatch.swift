import RunLoopKit
import RunLoopKitSystem

/// systemd's memory-pressure convention: a unit with `MemoryPressureWatch=` gets `MEMORY_PRESSURE_WATCH` (the
/// pressure file to watch, or a notifier's FIFO or socket; `/dev/null` when watching is off) and `MEMORY_PRESSURE_WRITE` (the trigger to write to it,
/// base64-encoded), set from `MemoryPressureThresholdSec=`. Reads the two variables; knows nothing of loops.
enum MemoryPressureWatch {
    /// What the service manager asked for: the file and the trigger text, or `nil` when it set nothing.
    struct Request: Equatable {
        var path: String
        /// The decoded `MEMORY_PRESSURE_WRITE`, or `nil` when it is absent (the caller's trigger is written then).
        var trigger: String?
    }

    /// The request in `environment` (`nil`: the process's), or `nil` when `MEMORY_PRESSURE_WATCH` is absent.
    /// - Throws: `LoopError.Code.unsupported` when it is empty or `/dev/null` (the unit turned watching off);
    ///   `LoopError.Code.invalidArgument` when it is not an absolute path, or `MEMORY_PRESSURE_WRITE` is not base64
    ///   of text.
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
        guard path.hasPrefix("/") else {
            throw LoopError(
                .invalidArgument, message: "MEMORY_PRESSURE_WATCH=\(path) is not an absolute path")
        }
        guard let encoded = variable("MEMORY_PRESSURE_WRITE"), !encoded.isEmpty else {
            return Request(path: path, trigger: nil)
        }
        guard let bytes = decodeBase64(encoded), !bytes.contains(0) else {
            throw LoopError(
                .invalidArgument, message: "MEMORY_PRESSURE_WRITE \"\(encoded)\" is not base64-encoded text")
        }
        return Request(path: path, trigger: String(decoding: bytes, as: UTF8.self))
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
