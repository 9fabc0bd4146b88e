import Glibc
import RunLoopKitSystem
import TestSupport
import Testing

@testable import RunLoopKit

/// A source's file identity across anonymous-inode files: every eventfd, epoll set, timerfd and signalfd of the
/// process shares one inode of the kernel's anon_inode mount (checked below), so device and inode (`FileIdentity`)
/// cannot tell them apart. A source of the user's on such a file keeps a duplicate of it while it is in no epoll set,
/// and an `add` asks the kernel (`kcmp(KCMP_FILE)`) whether the number still names that file: one that names another
/// eventfd now (or the loop's own epoll set) is refused with `badDescriptor`, as for pipes and sockets
/// (`FileDescriptorSourceTests`).
@Suite struct AnonymousInodeIdentityTests {
    /// The premise: two eventfds have the same device and inode, and kcmp tells them apart here.
    @Test func twoEventFDsShareOneInodeButNotOneFile() throws {
        let first = try EventFD.create()
        let second = try EventFD.create()
        defer {
            close(first)
            close(second)
        }
        #expect(FileDescriptorCalls.identity(of: first) == FileDescriptorCalls.identity(of: second))
        #expect(FileDescriptorCalls.isAnonymousInode(first))
        #expect(try FileDescriptorCalls.namesSameFile(first, as: second) == false)
        let copy = try FileDescriptorCalls.duplicate(first)
        defer { FileDescriptorCalls.close(copy) }
        #expect(try FileDescriptorCalls.namesSameFile(first, as: copy) == true)
    }

    /// What `add` answers for a source made on `descriptor` after `replace` ran on the loop's thread.
    private func addResult(
        making make: @escaping @Sendable () -> (descriptor: CInt, replacement: CInt),
        replace: @escaping @Sendable (CInt, CInt) -> Void
    ) -> String? {
        let code = Box<String>()
        let thread = TestThread {
            let (descriptor, replacement) = make()
            defer {
                close(descriptor)
                close(replacement)
            }
            let source = try! FileDescriptorSource(descriptor: descriptor) { _, _ in }
            replace(descriptor, replacement)
            do throws(LoopError) {
                try Loop.current.add(source)
                code.value = "added"
            } catch {
                code.value = "\(error.code)"
            }
            source.invalidate()
        }
        thread.join()
        return code.value
    }

    /// A source on an eventfd whose number then names another eventfd (`dup2`, so no other thread can take the
    /// number in between) is refused with `badDescriptor`.
    @Test func addingASourceWhoseEventFDWasReplacedIsRefused() {
        let answer = addResult(
            making: { (try! EventFD.create(), try! EventFD.create()) },
            replace: { descriptor, other in _ = dup2(other, descriptor) })
        #expect(answer == "\(LoopError.Code.badDescriptor)")
    }

    /// The same for a timerfd replaced by an epoll set: any two anonymous-inode files.
    @Test func addingASourceWhoseTimerFDWasReplacedByAnEpollSetIsRefused() {
        let answer = addResult(
            making: { (try! TimerFD.create(), try! Epoll.create()) },
            replace: { descriptor, other in _ = dup2(other, descriptor) })
        #expect(answer == "\(LoopError.Code.badDescriptor)")
    }

    /// The number given to another duplicate of the same eventfd still names the source's file: accepted.
    @Test func theSameEventFDUnderTheSameNumberIsAccepted() {
        let answer = addResult(
            making: { (try! EventFD.create(), -1) },
            replace: { descriptor, _ in
                let copy = dup(descriptor)
                _ = dup2(copy, descriptor)  // Closes the number's reference, then names the same open file again.
                close(copy)
            })
        #expect(answer == "added")
    }

    /// A source released by a loop whose thread exited, whose eventfd is then replaced, is refused by the next loop:
    /// the duplicate is taken again as the registration goes with its loop.
    @Test func aReleasedSourceWhoseEventFDWasReplacedIsRefusedByTheNextLoop() throws {
        let descriptor = try EventFD.create()
        let replacement = try EventFD.create()
        defer {
            close(descriptor)
            close(replacement)
        }
        let source = try FileDescriptorSource(descriptor: descriptor) { _, _ in }
        let first = TestThread { try! Loop.current.add(source) }
        first.join()  // The first loop's thread exited: the source is free for another loop.
        _ = dup2(replacement, descriptor)
        let code = Box<String>()
        let second = TestThread {
            do throws(LoopError) {
                try Loop.current.add(source)
                code.value = "added"
            } catch {
                code.value = "\(error.code)"
            }
        }
        second.join()
        source.invalidate()
        #expect(code.value == "\(LoopError.Code.badDescriptor)")
    }
}
