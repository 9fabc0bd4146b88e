import Glibc

extension EventFD {
    /// Reads and resets the counter: the sum of the writes since the last read, 0 when there were none.
    ///
    /// The corresponding C call is `read(2)`; `EAGAIN` (counter at zero, the descriptor being non-blocking)
    /// answers 0.
    static func take(_ descriptor: CInt) throws(SystemError) -> UInt64 {
        var value: UInt64 = 0
        do {
            _ = try retryingOnInterrupt("read") { Glibc.read(descriptor, &value, MemoryLayout<UInt64>.size) }
        } catch let error where error.errno == EAGAIN {
            return 0
        }
        return value
    }
}
