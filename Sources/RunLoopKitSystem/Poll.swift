import Glibc

/// The one `poll(2)` use: asking whether a single descriptor is readable right now, without waiting.
package enum Poll {
    /// Whether `descriptor` is readable now (a zero timeout: never blocks).
    ///
    /// The corresponding C call is `poll(2)`.
    package static func isReadable(_ descriptor: CInt) throws(SystemError) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = try retryingOnInterrupt("poll", on: descriptor) { Glibc.poll(&entry, 1, 0) }
        return ready == 1 && entry.revents & Int16(POLLIN) != 0
    }
}
