import Glibc

/// The process's environment variables: read one, remove one. Not thread-safe against another thread changing the
/// environment at the same time (no C library's `setenv` is); services read and unset theirs at start-up.
package enum ProcessEnvironment {
    /// The value of `name`, or `nil` when it is not set.
    ///
    /// The corresponding C call is `getenv(3)`.
    package static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Removes `name` from the environment (nothing happens when it is not set), so child processes do not inherit
    /// it.
    ///
    /// The corresponding C call is `unsetenv(3)`.
    package static func unset(_ name: String) {
        _ = unsetenv(name)
    }
}
