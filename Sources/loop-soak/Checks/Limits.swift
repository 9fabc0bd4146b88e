/// How long the soak waits before it calls something lost. A passing run never waits this long (every wait ends as
/// soon as its condition holds); the limits only bound how long a real loss takes to be reported.
///
/// They are generous on purpose: on the 2-vCPU VM the soak was written on, under the soak's own load and other
/// builds, the kernel's RCU grace-period thread was seen starved for a minute at a time (`rcu_preempt kthread
/// starved for 14752 jiffies` and `workqueue lockup` in `dmesg`), and processes waiting on it in `mmap` stayed in
/// uninterruptible sleep that long. A deadline shorter than such a stall would fail the run for the kernel's sake.
enum Limits {
    /// Seconds a round waits for what it expects (deliveries, drained streams, balances, releases).
    static let deliverySeconds = 120
    /// ``deliverySeconds`` as a duration.
    static var delivery: Duration { .seconds(deliverySeconds) }
    /// How long a child process may take to exit before the soak gives up on it.
    static let childExit = Duration.seconds(300)
    /// How long a driver's round may take before it reaches its checkpoint: a children round may wait ``childExit``
    /// for a child, then ``delivery`` for its report and again for its source's release.
    static var round: Duration { childExit + delivery + delivery }
    /// How long the end waits for a descriptor or thread that is still being let go of.
    static let release = Duration.seconds(60)
}
