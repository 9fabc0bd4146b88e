import RunLoopKit

/// Busy-waits for `duration`, standing in for heavy work on a loop's thread (decoding an image, a slow handler).
func busyWait(_ duration: Duration) {
    let end = Loop.Instant.now + duration
    while Loop.Instant.now < end {}
}
