import Glibc
import TestSupport
import Testing

@testable import RunLoopKit

/// A source's file identity at `add` for a file with an inode of its own (a pipe): a source made on a descriptor whose
/// number then names another pipe (`dup2`, while the source is in no loop) is refused with `badDescriptor`, not
/// registered on the other pipe. The device and inode decide here (no kcmp: that is for anonymous-inode files,
/// `AnonymousInodeIdentityTests`); a closed number is `FileDescriptorSourceTests`'. The mutation check's
/// `descriptor-identity` entry (scripts/mutation-check/mutations.txt) survived every other test.
@Suite struct ReplacedBeforeAddTests {
    @Test func addingASourceWhosePipeWasReplacedByAnotherPipeIsRefused() {
        let outcome = Box<String>()
        ItemsSupport.onLoopThread { loop in
            let first = Pipe()
            let second = Pipe()
            defer {
                first.close()  // Its read end's number names the second pipe's read end now.
                Glibc.close(second.writeEnd)
            }
            let source = try! FileDescriptorSource(descriptor: first.readEnd) { _, _ in }
            #expect(moveDescriptor(second.readEnd, onto: first.readEnd))
            do throws(LoopError) {
                try loop.add(source)
                outcome.value = "added"
            } catch {
                outcome.value = "\(error.code)"
            }
            source.invalidate()
        }
        #expect(outcome.value == "\(LoopError.Code.badDescriptor)")
    }
}
