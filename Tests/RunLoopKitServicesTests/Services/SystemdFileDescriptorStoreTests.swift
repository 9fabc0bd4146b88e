import Glibc
import RunLoopKit
import TestSupport
import Testing

@testable import RunLoopKitServices

/// The fd store and timeout extensions against a stand-in notify socket: the message read with `recvmsg`, the passed
/// descriptors taken from its `SCM_RIGHTS` header.
@Suite struct SystemdFileDescriptorStoreTests {
    /// The next datagram on `socket` and the descriptors it carried (now this process's own).
    static func receiveWithDescriptors(_ socket: CInt) -> (text: String, descriptors: [CInt])? {
        var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 10_000) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        // cmsghdr (16 bytes on 64-bit Linux) followed by up to 16 ints.
        var control = [UInt8](repeating: 0, count: 16 + 16 * 4)
        let (count, controlLength) = buffer.withUnsafeMutableBytes { bytes in
            control.withUnsafeMutableBytes { controlBytes in
                var vector = iovec(iov_base: bytes.baseAddress, iov_len: bytes.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    var header = msghdr()
                    header.msg_iov = vectorPointer
                    header.msg_iovlen = 1
                    header.msg_control = controlBytes.baseAddress
                    header.msg_controllen = controlBytes.count
                    let count = recvmsg(socket, &header, Int32(MSG_CMSG_CLOEXEC))
                    return (count, header.msg_controllen)
                }
            }
        }
        guard count >= 0 else { return nil }
        var descriptors: [CInt] = []
        if controlLength >= 16 {
            control.withUnsafeBytes { raw in
                let length = raw.load(fromByteOffset: 0, as: Int.self)
                let level = raw.load(fromByteOffset: 8, as: CInt.self)
                let type = raw.load(fromByteOffset: 12, as: CInt.self)
                guard level == SOL_SOCKET, type == CInt(SCM_RIGHTS) else { return }
                for index in 0..<(length - 16) / 4 {
                    descriptors.append(raw.load(fromByteOffset: 16 + 4 * index, as: CInt.self))
                }
            }
        }
        return (String(decoding: buffer[..<count], as: UTF8.self), descriptors)
    }

    @Test func storedDescriptorsArriveWithTheirNameAndStillWork() throws {
        let manager = NotifySocketStandIn()
        defer { manager.close() }
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": manager.address])
        var ends: [CInt] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        #expect(try notifier.storeDescriptors(ends, name: "state pipe"))
        let received = try #require(Self.receiveWithDescriptors(manager.descriptor))
        defer { received.descriptors.forEach { close($0) } }
        #expect(received.text == "FDSTORE=1\nFDNAME=state pipe")
        #expect(received.descriptors.count == 2)
        // The duplicates name the same pipe: written through the stored write end, read from ours.
        if received.descriptors.count == 2 {
            #expect(write(received.descriptors[1], "x", 1) == 1)
            var byte: UInt8 = 0
            #expect(read(ends[0], &byte, 1) == 1 && byte == UInt8(ascii: "x"))
        }
        #expect(try notifier.storeDescriptors([ends[0]], name: "r", pollForHangUp: false))
        let second = try #require(Self.receiveWithDescriptors(manager.descriptor))
        second.descriptors.forEach { close($0) }
        #expect(second.text == "FDSTORE=1\nFDNAME=r\nFDPOLL=0" && second.descriptors.count == 1)
    }

    @Test func removalAndTimeoutExtensionsAreSent() throws {
        let manager = NotifySocketStandIn()
        defer { manager.close() }
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": manager.address])
        #expect(try notifier.removeStoredDescriptors(named: "state"))
        #expect(manager.receive() == "FDSTOREREMOVE=1\nFDNAME=state")
        #expect(try notifier.extendTimeout(by: .seconds(30)))
        #expect(manager.receive() == "EXTEND_TIMEOUT_USEC=30000000")
        #expect(try notifier.extendTimeout(by: .nanoseconds(1)))
        #expect(manager.receive() == "EXTEND_TIMEOUT_USEC=1")
    }

    @Test func withoutAServiceManagerNothingIsSent() throws {
        let notifier = SystemdNotifier(environment: [:])
        #expect(try notifier.storeDescriptors([0], name: "stdin") == false)
        #expect(try notifier.removeStoredDescriptors(named: "stdin") == false)
        #expect(try notifier.extendTimeout(by: .seconds(1)) == false)
    }

    @Test func badArgumentsAndDescriptorsThrowTypedErrors() throws {
        let manager = NotifySocketStandIn()
        defer { manager.close() }
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": manager.address])
        let cases: [(String, () throws(LoopError) -> Bool, LoopError.Code)] = [
            (
                "no descriptors", { () throws(LoopError) in try notifier.storeDescriptors([], name: "a") },
                .invalidArgument
            ),
            (
                "254 descriptors",
                { () throws(LoopError) in try notifier.storeDescriptors(Array(repeating: 0, count: 254), name: "a") },
                .invalidArgument
            ),
            ("empty name", { () throws(LoopError) in try notifier.storeDescriptors([0], name: "") }, .invalidArgument),
            ("colon", { () throws(LoopError) in try notifier.storeDescriptors([0], name: "a:b") }, .invalidArgument),
            (
                "line break", { () throws(LoopError) in try notifier.storeDescriptors([0], name: "a\nREADY=1") },
                .invalidArgument
            ),
            (
                "256 characters",
                { () throws(LoopError) in
                    try notifier.removeStoredDescriptors(named: String(repeating: "n", count: 256))
                }, .invalidArgument
            ),
            (
                "closed descriptor", { () throws(LoopError) in try notifier.storeDescriptors([987_654], name: "gone") },
                .badDescriptor
            ),
            ("zero extension", { () throws(LoopError) in try notifier.extendTimeout(by: .zero) }, .invalidArgument),
            (
                "negative extension", { () throws(LoopError) in try notifier.extendTimeout(by: .seconds(-1)) },
                .invalidArgument
            ),
        ]
        for (label, call, code) in cases {
            do throws(LoopError) {
                _ = try call()
                Issue.record("\(label): no error")
            } catch {
                #expect(error.code == code, "\(label): \(error)")
            }
        }
        #expect(manager.receive(timeout: .milliseconds(50)) == nil, "a refused call sent something")
    }
}
