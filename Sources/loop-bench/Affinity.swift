import Glibc

/// The CPUs this process may run on, to label runs pinned with `taskset` (W1 under `taskset -c 0` is W1@cpu0).
enum Affinity {
    /// The allowed CPU numbers, ascending.
    static var cpus: [Int] { GNUExtensions.allowedCPUs() }

    /// `@cpuN` when the process is pinned to the single CPU N on a machine with several, else empty.
    static var labelSuffix: String {
        let allowed = cpus
        guard allowed.count == 1, sysconf(Int32(_SC_NPROCESSORS_ONLN)) > 1 else { return "" }
        return "@cpu\(allowed[0])"
    }

    /// The allowed CPUs as a list, e.g. `0,1`.
    static var description: String {
        cpus.map(String.init).joined(separator: ",")
    }
}
