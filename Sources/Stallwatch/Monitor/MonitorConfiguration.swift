import CStallwatchSampler
import StallwatchCore

/// What every monitor is configured with, `StallMonitor` and `HeartbeatMonitor` alike: what a
/// stall is (the tiers) and how its thread is sampled. Each monitor's `Configuration` embeds one
/// as `common` and reads and writes its fields as its own (`configuration.sampleInterval`). A
/// plain value; any thread.
public struct MonitorConfiguration: Sendable {
    /// The budget and the tier thresholds; a callout (a heartbeat) later than `tiers.budget` is
    /// a stall.
    public var tiers = TierThresholds()
    /// Time between samples of a stall; it grows for long hangs (×4 after 250 ms, ×20
    /// after 1 s).
    public var sampleInterval: Duration = .milliseconds(5)
    /// Samples kept per stall at most; the stall is still timed to its end.
    public var maxSamplesPerStall = 200
    /// The real-time signal used to interrupt the watched thread (nil: SIGRTMIN+4, for every
    /// monitor of the process). It must be free: `start()` refuses a signal someone else handles.
    public var signal: Int32? = nil
    /// How long one stack capture may wait for the watched thread to run the handler (a
    /// thread in state D cannot until its syscall returns).
    public var captureTimeout: Duration = .milliseconds(5)
    /// A watchdog that oversleeps by more than this was stopped (SIGSTOP, a debugger): the
    /// stall it then sees is flagged `suspended`.
    public var suspendThreshold: Duration = .milliseconds(50)
    /// Whether stacks the signal cannot take (a thread inside a long read or write) come from
    /// a perf_event sample of the thread's user stack, enabled only during stalls. The
    /// environment variable `STALLWATCH_PERF=0` turns it off too.
    public var perfSampling = true
    /// Whether the watched thread samples itself on time: a perf task-clock tick on its user-mode
    /// CPU time lets its own handler take the stack of a callout (a heartbeat) past its budget,
    /// however late the watchdog is scheduled (docs/watchdog.md, "On time without privileges").
    /// `STALLWATCH_PERF=0` turns it off too. On by default; where it cannot run (perf refused,
    /// ThreadSanitizer, no libunwind), `statistics.selfSampling` says why. While it runs, the
    /// watchdog never signals the thread (docs/watchdog.md).
    public var selfSampling = true
    /// The finest tick, in the watched thread's user-mode CPU time: the tick after a deadline
    /// comes within about this much of it. Away from deadlines the handler spaces its ticks
    /// out (about two per budget for a loop of short callouts); an idle thread takes none.
    public var selfSamplingPeriod: Duration = .microseconds(500)
    /// What raises the self-sampling ticks (docs/watchdog.md, "On time without privileges").
    /// `StallMonitor` uses `.perfTaskClock`, `HeartbeatMonitor` `.threadCPUTimer` by default.
    public var selfSamplingTick = SelfSamplingTick.perfTaskClock

    /// The self-sampling ticks' source. A plain value; any thread.
    public enum SelfSamplingTick: Sendable, Hashable, CustomStringConvertible {
        /// A perf_event task-clock event on the thread's user-mode CPU time: ticks as fine as
        /// `selfSamplingPeriod`; while attached, it costs the thread a few microseconds on every
        /// context switch (the kernel stops and restarts its timer). Right for a UI loop, which
        /// switches rarely and whose stalls are a few milliseconds past the budget.
        case perfTaskClock
        /// A POSIX timer on the thread's CPU clock: checked at the scheduler tick, so ticks come
        /// at its granularity (4 ms at `CONFIG_HZ=250`), and nothing per context switch. Right
        /// for a server's event loops, which switch at every request.
        case threadCPUTimer

        /// "perf task clock" or "thread CPU timer".
        public var description: String {
            switch self {
            case .perfTaskClock: "perf task clock"
            case .threadCPUTimer: "thread CPU timer"
            }
        }

        var kind: Int32 {
            switch self {
            case .perfTaskClock: SW_SELF_TICK_PERF
            case .threadCPUTimer: SW_SELF_TICK_CPU_TIMER
            }
        }
    }

    /// Tests: the watchdog gets no CPU for this long once a callout (a heartbeat) is due to be
    /// looked at, as an unprivileged watchdog on a busy machine may wait for one.
    var watchdogLatenessForTesting: Duration = .zero

    /// The frame budget (1/60 s by default).
    public var budget: Duration {
        get { tiers.budget }
        set { tiers.budget = newValue }
    }

    /// The defaults: 60 Hz budget, Apple's tiers, 5 ms samples.
    public init() {}

    /// The sampling interval `elapsed` ns into a stall: `sampleInterval`, ×4 after 250 ms and
    /// ×20 after 1 s, so a long hang keeps a bounded number of samples spread over its length.
    func sampleInterval(after elapsed: UInt64) -> UInt64 {
        let base = sampleInterval.nanoseconds
        if elapsed > 1_000_000_000 { return base * 20 }
        if elapsed > 250_000_000 { return base * 4 }
        return base
    }
}
