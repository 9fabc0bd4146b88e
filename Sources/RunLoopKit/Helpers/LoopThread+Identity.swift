import RunLoopKitSystem

extension LoopThread {
    /// The most bytes of a thread name the kernel keeps (16 with the terminating zero).
    static let maximumNameLength = 15

    /// `name` cut to at most 15 UTF-8 bytes, at a character boundary: what the kernel can keep.
    static func truncatedThreadName(_ name: String) -> String {
        var result = ""
        var length = 0
        for scalar in name.unicodeScalars {
            let size = UTF8.width(scalar)
            guard length + size <= maximumNameLength else { break }
            result.unicodeScalars.append(scalar)
            length += size
        }
        return result
    }

    /// Names the calling thread (shown by `top -H`, `ps -L`, debuggers), cut to 15 bytes at a character boundary.
    ///
    /// A name is cosmetic: if the kernel refuses it, the thread keeps the name it inherited (its creator's).
    static func setCurrentThreadName(_ name: String) {
        try? ThreadCalls.setCurrentName(truncatedThreadName(name))
    }
}
