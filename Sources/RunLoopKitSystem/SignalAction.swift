import Glibc

/// The `sigaction` call the signal relay uses to install its handler and to put back what was there.
package enum SignalAction {
    /// Sets the disposition of `signal` to `action` (or only reads it, for `nil`) and answers the one it replaces.
    ///
    /// The corresponding C call is `sigaction(2)`.
    package static func exchange(_ signal: CInt, for action: sigaction?) throws(SystemError) -> sigaction {
        var previous = sigaction()
        if var action {
            _ = try retryingOnInterrupt("sigaction") { sigaction(signal, &action, &previous) }
        } else {
            _ = try retryingOnInterrupt("sigaction") { sigaction(signal, nil, &previous) }
        }
        return previous
    }
}
