// libFuzzer's entry point for RunLoopKit's parsers of input from outside the process. scripts/check/fuzz.sh compiles it
// with Tests/RunLoopKitServicesTests/HostileInput/HostileInput.swift (the targets) against the library built with
// coverage and AddressSanitizer; RUNLOOPKIT_FUZZ_TARGET names the target (see HostileInput.targets).
import Glibc

/// The target this process fuzzes, chosen once.
let fuzzTarget: @Sendable ([UInt8], Bool) -> [String] = {
    let name = getenv("RUNLOOPKIT_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = HostileInput.targets[name] else {
        fatalError("RUNLOOPKIT_FUZZ_TARGET must be one of \(HostileInput.targets.keys.sorted()), not \"\(name)\"")
    }
    return target
}()

/// One input: a crash, or a problem the target names, is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let problems = fuzzTarget(bytes, true)  // One thread: descriptors open before and after are compared.
    if !problems.isEmpty { fatalError(problems.joined(separator: "\n")) }
    return 0
}
