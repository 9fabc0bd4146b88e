import Glibc

/// Lines on standard error, written with `write(2)` in one piece (C's `stderr` is shared mutable state to Swift 6).
enum StandardError {
    /// Writes `line` and a newline on standard error.
    static func print(_ line: String) {
        var text = line + "\n"
        text.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
    }
}
