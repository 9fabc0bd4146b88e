import Glibc
import RunLoopKit
import Testing

/// With the process out of descriptors, starting a loop thread throws instead of killing the process, and works
/// again once descriptors are free (in a child process, whose descriptor limit is lowered).
@Suite struct DescriptorExhaustionTests {
    @Test func aLoopThreadStartedWithoutDescriptorsThrowsAndTheProcessGoesOn() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            // Use up every descriptor below a lowered limit, keeping the spare ones to free later.
            var limit = rlimit()
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
            limit.rlim_cur = 256
            setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
            var spares: [CInt] = []
            while true {
                let descriptor = dup(0)
                if descriptor < 0 { break }
                spares.append(descriptor)
            }
            var outcome = "verdict:"
            do throws(LoopError) {
                _ = try LoopThread(name: "starved")
                outcome += " started without descriptors"
            } catch {
                outcome += error.code == .systemCallFailed && error.errno == EMFILE ? " threw EMFILE" : " \(error)"
            }
            do throws(LoopError) {
                _ = try Loop.forCurrentThread()
                outcome += ", current loop made"
            } catch {
                outcome += error.errno == EMFILE ? ", forCurrentThread threw EMFILE" : ", \(error)"
            }
            for descriptor in spares.suffix(16) { close(descriptor) }
            do {
                let thread = try LoopThread(name: "fed")
                let sum = try thread.performAndWait { 20 + 22 }
                thread.stop()
                outcome += ", then started and answered \(sum)"
            } catch {
                outcome += ", then still failed: \(error)"
            }
            print(outcome)
            exit(0)
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        #expect(
            output.contains("verdict: threw EMFILE, forCurrentThread threw EMFILE, then started and answered 42"),
            "\(output)")
    }
}
