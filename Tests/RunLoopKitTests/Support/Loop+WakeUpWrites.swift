import Synchronization

@testable import RunLoopKit

extension Loop {
    /// How many times other threads have written the loop's eventfd to wake it, so far: the wake-up tests read it
    /// before and after what they check, and compare.
    var wakeUpWrites: Int { poller.eventFDWrites.load(ordering: .relaxed) }
}
