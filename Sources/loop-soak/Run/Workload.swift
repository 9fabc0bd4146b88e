/// One kind of traffic the soak keeps going: its driver threads, started once, running rounds until the
/// ``RunControl`` stops them.
///
/// Between rounds (at a checkpoint) a workload holds a fixed set of descriptors and threads, so that counts taken
/// with every driver parked compare exactly. What it expects and what arrived is counted in ``Tally`` rows.
protocol Workload: AnyObject, Sendable {
    /// Starts the drivers; each registers with `control` and calls its checkpoint between rounds.
    func start(_ control: RunControl) throws

    /// Waits for the drivers' threads to end, once `control` stopped them.
    func join()

    /// Releases the workload's long-lived items and descriptors, once its drivers ended and before the hubs stop;
    /// the final checks that need everything quiet run here.
    func tearDown()
}
