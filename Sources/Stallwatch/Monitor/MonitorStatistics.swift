import StallwatchCore

/// What every monitor counts, `StallMonitor` and `HeartbeatMonitor` alike (a heartbeat monitor
/// over all its executors). Each monitor's `Statistics` embeds one as `common` and reads its
/// fields as its own (`statistics.stalls`). A plain value; any thread.
public struct MonitorStatistics: Sendable {
    /// Stalls detected (suspended ones and those the watchdog missed included).
    public var stalls = 0
    /// Stalls flagged `suspended` (the process was stopped during them).
    public var suspendedStalls = 0
    /// Stack captures attempted.
    public var captures = 0
    /// Captures whose handler did not run within `captureTimeout` (state D, signal blocked).
    public var captureTimeouts = 0
    /// Signal sent → stack ready, for the last captures (ns, at most 4096 kept).
    public var captureLatencyNanos: [UInt64] = []
    /// Budget expiry → first sample taken, for the last stalls (ns, at most 4096 kept).
    public var detectionLatencyNanos: [UInt64] = []
    /// How the watchdog thread is scheduled (`description`: "SCHED_FIFO 1", "nice -10",
    /// "slice 100 us" or "normal").
    public var watchdogScheduling = StallMonitor.WatchdogScheduling.normal
    /// How the perf path runs (set once the watchdog thread has started; a heartbeat monitor's,
    /// for the last thread a heartbeat ran on).
    public var perfSampling = StallMonitor.PerfSampling.disabled
    /// Samples taken, by where their stack came from.
    public var stackSources: [SampleSource: Int] = [:]
    /// Time to unwind a perf sample's stack copy on the watchdog, for the last ones (ns, at
    /// most 4096 kept).
    public var perfUnwindNanos: [UInt64] = []
    /// Whether the watched thread samples itself (set once `start()` returned; a heartbeat
    /// monitor's, for the last thread a heartbeat ran on).
    public var selfSampling = StallMonitor.SelfSampling.disabled
    /// Samples whose stack the watched thread took of itself (counted in `stackSources` as
    /// `signal`: the same handler-side unwind, triggered by the kernel's tick).
    public var selfSamples = 0
    /// Handler entry → stack ready for those samples (ns, at most 4096 kept).
    public var selfCaptureNanos: [UInt64] = []
    /// Stalls that ended before the watchdog looked (it got no CPU meanwhile): timed from the
    /// loop's own stamps (from the heartbeat), with the thread's own captures as samples
    /// (counted in `stalls` too).
    public var missedByWatchdog = 0

    /// All zero.
    public init() {}
}
