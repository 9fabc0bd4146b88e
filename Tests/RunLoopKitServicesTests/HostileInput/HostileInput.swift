import Glibc
import RunLoopKit

// @testable, not for internals but for the `package` declarations: scripts/fuzz.sh compiles this file with swiftc
// outside SwiftPM, without the package's name, which a plain import needs to see them.
@testable import RunLoopKitServices
@testable import RunLoopKitSystem

/// Every parser of input from outside the process, fed arbitrary bytes: the systemd variables (`LISTEN_*`,
/// `NOTIFY_SOCKET` and the notify lines, `WATCHDOG_*`, `MEMORY_PRESSURE_*`), PSI files, `/proc/self/cgroup` and
/// `mountinfo`, and inotify's event buffers. Each target answers the problems it found: a crash is the fuzzer's to
/// see, a broken promise (an untyped error, a result that breaks an invariant, a descriptor opened or closed) is
/// named here.
///
/// Shared by the fuzzer (scripts/check/fuzz.sh compiles this file with scripts/check/fuzz/FuzzEntry.swift under
/// libFuzzer) and by `HostileInputTests`, which replays the kept corpus (scripts/check/fuzz/corpus/<target>/) and the
/// crashes found. Imports nothing but the library and the system layer: no Testing, no Foundation.
///
/// Input form: fields separated by the byte 0xFF (which UTF-8 text never holds). Where the target reads variables,
/// each field is `NAME=value` (a variable that no field names is absent); a value that is exactly `$` stands for
/// the process's own pid (the fuzzer gets past the pid check that way).
enum HostileInput {
    /// The targets, by the name scripts/check/fuzz.sh and the corpus directories use. The flag says whether the process
    /// is quiet (no other thread opens or closes descriptors meanwhile, as in the fuzzer): only then are the numbers
    /// open before and after compared.
    static let targets: [String: @Sendable ([UInt8], Bool) -> [String]] = [
        "listen": listen, "notify": { bytes, _ in notify(bytes) }, "watchdog": { bytes, _ in watchdog(bytes) },
        "memory-pressure-env": { bytes, _ in memoryPressureEnvironment(bytes) },
        "trigger": { bytes, _ in trigger(bytes) }, "psi": { bytes, _ in pressureAverages(bytes) },
        "proc-cgroup": { bytes, _ in procCgroup(bytes) }, "inotify": { bytes, _ in inotify(bytes) },
    ]

    /// The pid the targets pretend to be.
    static let processID: pid_t = 4242

    /// The fields of `bytes`, split at 0xFF, as text (invalid UTF-8 repaired, as the environment's readers do).
    static func fields(_ bytes: [UInt8]) -> [String] {
        bytes.split(separator: 0xFF, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The `NAME=value` fields of `bytes` as an environment (the last of a name wins).
    static func variables(_ bytes: [UInt8]) -> [String: String] {
        var environment: [String: String] = [:]
        for field in fields(bytes) {
            guard let equals = field.firstIndex(of: "=") else { continue }
            let value = String(field[field.index(after: equals)...])
            environment[String(field[..<equals])] = value == "$" ? "\(processID)" : value
        }
        return environment
    }

    static func field(_ fields: [String], _ index: Int) -> String? {
        index < fields.count ? fields[index] : nil
    }

    /// A problem unless `error` has one of `codes`.
    static func typed(_ error: LoopError, _ codes: [LoopError.Code], _ what: String) -> [String] {
        codes.contains(error.code) ? [] : ["\(what): unexpected \(error)"]
    }

    // MARK: systemd

    /// `LISTEN_PID`, `LISTEN_PIDFDID`, `LISTEN_FDS`, `LISTEN_FDNAMES`; what they promise is then adopted for real
    /// (descriptors from 3 on checked open, marked close-on-exec): nothing may be opened or closed, and nothing
    /// allocated in proportion to a count that was not checked (the fuzzer runs with a small malloc limit).
    static func listen(_ bytes: [UInt8], quiet: Bool) -> [String] {
        let environment = variables(bytes)
        let variables = SystemdSocketActivation.Variables(
            pid: environment["LISTEN_PID"], pidFDID: environment["LISTEN_PIDFDID"], count: environment["LISTEN_FDS"],
            names: environment["LISTEN_FDNAMES"])
        let promise: SystemdSocketActivation.Promise?
        do throws(LoopError) {
            promise = try variables.promise(processID: processID, processIdentity: { 7 })
        } catch {
            return typed(error, [.invalidArgument], "promise")
        }
        guard let promise else { return [] }
        var problems: [String] = []
        if promise.count < 1 || promise.count > Int(Int32.max - 3) { problems.append("count \(promise.count)") }
        if let names = promise.names,
            names.split(separator: ":", omittingEmptySubsequences: false).count != promise.count
        {
            problems.append("\(promise.count) descriptors named \"\(names)\"")
        }
        let before = quiet ? openDescriptors() : []
        let opened = FaultInjection.openDescriptors
        do throws(LoopError) {
            let adopted = try SystemdSocketActivation.adopt(promise)
            if adopted.map(\.descriptor) != (0..<adopted.count).map({ 3 + CInt($0) }) || adopted.count != promise.count
            {
                problems.append("adopted \(adopted.map(\.descriptor)) for \(promise.count)")
            }
        } catch {
            problems += typed(error, [.badDescriptor], "adopt")
        }
        if quiet && openDescriptors() != before {
            problems.append("descriptors opened or closed: \(before) → \(openDescriptors())")
        }
        if FaultInjection.openDescriptors.keys.contains(where: { opened[$0] == nil }) {
            problems.append("the library left a descriptor open")
        }
        return problems
    }

    /// `NOTIFY_SOCKET` and the lines of one notification: what would be sent, without sending it.
    static func notify(_ bytes: [UInt8]) -> [String] {
        let values = fields(bytes)
        guard let address = values.first else { return [] }
        let assignments = Array(values.dropFirst())
        do throws(LoopError) {
            let (socket, message) = try SystemdNotifier.datagram(assignments, to: address)
            var problems: [String] = []
            if socket.isEmpty || socket.count > UnixSocketAddress.maximumLength { problems.append("address \(socket)") }
            if socket.first != UInt8(ascii: "/") && socket.first != 0 { problems.append("address \(socket)") }
            if socket.first == UInt8(ascii: "/") && socket.contains(0) { problems.append("NUL in path \(socket)") }
            if message.contains(0) { problems.append("NUL in message") }
            if message.filter({ $0 == UInt8(ascii: "\n") }).count != assignments.count - 1 {
                problems.append("\(assignments.count) assignments, message \(message)")
            }
            return problems
        } catch {
            return typed(error, [.invalidArgument], "datagram")
        }
    }

    /// `WATCHDOG_USEC`, `WATCHDOG_PID`.
    static func watchdog(_ bytes: [UInt8]) -> [String] {
        let environment = variables(bytes)
        do throws(LoopError) {
            let interval = try SystemdWatchdog.keepAliveInterval(
                timeout: environment["WATCHDOG_USEC"], pid: environment["WATCHDOG_PID"], processID: processID)
            if let interval, interval <= .zero { return ["interval \(interval)"] }
            return []
        } catch {
            return typed(error, [.invalidArgument], "keepAliveInterval")
        }
    }

    /// `MEMORY_PRESSURE_WATCH`, `MEMORY_PRESSURE_WRITE` (base64 of the trigger, systemd's with a trailing NUL),
    /// then the trigger they ask for and what would be written for it.
    static func memoryPressureEnvironment(_ bytes: [UInt8]) -> [String] {
        let environment = variables(bytes)
        var problems: [String] = []
        if let encoded = environment["MEMORY_PRESSURE_WRITE"], let decoded = MemoryPressureWatch.decodeBase64(encoded),
            decoded.count > encoded.utf8.count * 3 / 4 + 2
        {
            problems.append("\(encoded.utf8.count) characters decoded to \(decoded.count) bytes")
        }
        let request: MemoryPressureWatch.Request?
        do throws(LoopError) {
            request = try MemoryPressureWatch.request(in: environment)
        } catch {
            return problems + typed(error, [.invalidArgument, .unsupported], "request")
        }
        guard let request else { return problems }
        // Bytes, as systemd's path_is_normalized reads them: String's own contains and hasPrefix compare characters,
        // and "/" followed by a combining mark is one character that is not "/".
        let path = Array(request.path.utf8)
        func holds(_ part: String) -> Bool {
            let part = Array(part.utf8)
            return path.count >= part.count
                && (0...(path.count - part.count)).contains { path[$0..<$0 + part.count].elementsEqual(part) }
        }
        func ends(with part: String) -> Bool { path.reversed().starts(with: part.utf8.reversed()) }
        if path.first != UInt8(ascii: "/") || holds("//") || holds("/./") || holds("/../") || ends(with: "/..")
            || ends(with: "/.")
        {
            problems.append("path not normalized: \(request.path)")
        }
        guard let text = request.trigger, let written = request.bytes else { return problems }
        if text.utf8.contains(0) { problems.append("NUL in trigger \(written)") }
        if Array(text.utf8) != (written.last == 0 ? Array(written.dropLast()) : written) {
            problems.append("trigger \(text) from \(written)")
        }
        guard let trigger = try? MemoryPressureTrigger(parsing: text) else { return problems }
        if MemoryPressureSource.written(to: .notifierSocket, trigger: trigger, requested: written) != written {
            problems.append("a notifier would not get \(written)")
        }
        if MemoryPressureSource.written(to: .pressureFile, trigger: trigger, requested: written).last != 0 {
            problems.append("a pressure file would get no NUL")
        }
        return problems
    }

    /// A trigger's text (`MEMORY_PRESSURE_WRITE` decoded, or the caller's): parsed, it must print as something that
    /// parses to the same trigger, within the kernel's limits.
    static func trigger(_ bytes: [UInt8]) -> [String] {
        let text = String(decoding: bytes, as: UTF8.self)
        do throws(LoopError) {
            let trigger = try MemoryPressureTrigger(parsing: text)
            var problems: [String] = []
            if trigger.window < MemoryPressureTrigger.shortestWindow
                || trigger.window > MemoryPressureTrigger.longestWindow
                || trigger.threshold <= .zero || trigger.threshold > trigger.window
            {
                problems.append("out of range: \(trigger)")
            }
            if (try? MemoryPressureTrigger(parsing: trigger.description)) != trigger {
                problems.append("\(trigger) does not parse back")
            }
            return problems
        } catch {
            return typed(error, [.invalidArgument], "trigger")
        }
    }

    // MARK: Kernel files

    /// A pressure file's contents (`some avg10=… avg60=… avg300=… total=…`, then `full …`).
    static func pressureAverages(_ bytes: [UInt8]) -> [String] {
        guard let averages = MemoryPressureAverages(parsing: String(decoding: bytes, as: UTF8.self)) else { return [] }
        var problems: [String] = []
        for line in [averages.some, averages.full] {
            for share in [line.average10, line.average60, line.average300] where !(0...100).contains(share) {
                problems.append("share \(share)")
            }
            if line.total < .zero { problems.append("total \(line.total)") }
        }
        return problems
    }

    /// `/proc/self/cgroup`, then `/proc/self/mountinfo`: the cgroup's `memory.pressure` they name.
    static func procCgroup(_ bytes: [UInt8]) -> [String] {
        let values = fields(bytes)
        let membership = field(values, 0) ?? ""
        let mountinfo = field(values, 1) ?? ""
        if let group = MemoryPressureFile.unifiedGroup(in: membership), !group.hasPrefix("/") {
            return ["group \(group)"]
        }
        _ = MemoryPressureFile.cgroup2Mount(in: mountinfo)
        guard let path = MemoryPressureFile.cgroupPath(membership: membership, mountinfo: mountinfo) else { return [] }
        return path.hasSuffix("/memory.pressure") ? [] : ["path \(path)"]
    }

    /// What one read of an inotify descriptor could answer: records walked without reading past the end.
    static func inotify(_ bytes: [UInt8]) -> [String] {
        var problems: [String] = []
        var walked = 0
        let whole = bytes.withUnsafeBytes { buffer in
            FileChangeSource.forEachRecord(in: buffer) { record, name in
                walked += Inotify.headerSize + Int(record.len)
                // Invalid UTF-8 is repaired (a byte may become three), so only emptiness and NULs are checked.
                if let name, name.isEmpty || name.utf8.contains(0) {
                    problems.append("name \(name) in \(record.len) bytes")
                }
                return true
            }
        }
        if walked > bytes.count { problems.append("walked \(walked) of \(bytes.count) bytes") }
        if whole && walked != bytes.count { problems.append("whole, but walked \(walked) of \(bytes.count) bytes") }
        return problems
    }

    // MARK: Descriptors

    /// Which of the first 256 descriptor numbers are open.
    static func openDescriptors() -> [CInt] {
        (0..<256).filter { FileDescriptorCalls.isOpen($0) }
    }
}
