import Glibc

/// Glibc's GNU extensions the harness needs and the Swift Glibc module does not import (they sit behind
/// `_GNU_SOURCE`): looked up once in the already loaded C library.
enum GNUExtensions {
    private typealias GetCPU = @convention(c) () -> CInt
    private typealias GetAffinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer?) -> CInt

    private static let getCPU: GetCPU? = symbol("sched_getcpu", as: GetCPU.self)
    private static let getAffinity: GetAffinity? = symbol("sched_getaffinity", as: GetAffinity.self)

    /// The calling thread's CPU number, or -1 when unknown.
    ///
    /// The corresponding C call is `sched_getcpu(3)` (served by the vDSO's `getcpu`).
    static func currentCPU() -> CInt {
        getCPU?() ?? -1
    }

    /// The CPUs this process may run on, ascending (empty when unknown).
    ///
    /// The corresponding C call is `sched_getaffinity(2)`.
    static func allowedCPUs() -> [Int] {
        var mask = [UInt8](repeating: 0, count: 128)  // 1024 CPUs, glibc's cpu_set_t.
        guard let getAffinity, mask.withUnsafeMutableBytes({ getAffinity(0, $0.count, $0.baseAddress) }) == 0 else {
            return []
        }
        return mask.indices.flatMap { byte in
            (0..<8).compactMap { bit in mask[byte] & (1 << bit) != 0 ? byte * 8 + bit : nil }
        }
    }

    private static func symbol<Function>(_ name: String, as type: Function.Type) -> Function? {
        guard let address = dlsym(dlopen(nil, RTLD_NOW), name) else { return nil }
        return unsafeBitCast(address, to: type)
    }
}
