/// An executor a recording watched: how it was timed, its thread where known, and from when
/// (`watched` records, kind 28). A plain value; use it on any thread.
public struct WatchedExecutor: Sendable, Hashable, Codable {
    /// The executor's label, as its stalls carry it (`main-queue`, `NIO-ELT-0-#1`).
    public var label: String
    /// How it was timed: `MainLoop` (its own callouts), `heartbeat`, `pool` (the Swift
    /// Concurrency pool's heartbeats), the wait an event loop was timed by (`epoll`, `poll`,
    /// `select`), `items` (each `DispatchQueue.main` item timed) or `jobs` (each Swift job timed);
    /// `nothing` (with an empty label) when the process ran nothing to watch.
    public var how: String
    /// Its thread (0 when not known yet: a heartbeat executor's thread is learnt later).
    public var tid: UInt32
    /// When watching began (CLOCK_MONOTONIC ns).
    public var since: UInt64

    /// An executor watched as `how` from `since`, its stalls labelled `label`, on thread `tid`.
    public init(label: String, how: String, tid: UInt32, since: UInt64) {
        self.label = label
        self.how = how
        self.tid = tid
        self.since = since
    }

    /// The `how` of the one entry that says nothing was watched.
    public static let nothing = "nothing"
    /// The `how` of `MainLoop`, timed by its own callouts.
    public static let mainLoop = "MainLoop"
    /// The `how` of the Swift Concurrency pool, watched by heartbeats.
    public static let pool = "pool"
}
