/// What the main thread was doing at one instant of a stall: its stack and kernel state.
///
/// A plain value; use it on any thread.
public struct Sample: Sendable, Hashable, Codable {
    /// When the sample was taken, in `CLOCK_MONOTONIC` nanoseconds.
    public var time: UInt64
    /// The backtrace, innermost frame first; `source` says how it was captured. Empty when
    /// nothing could be captured.
    public var frames: [Frame]
    /// The scheduler state from `/proc/<pid>/task/<tid>/stat`.
    public var state: ThreadState
    /// The syscall number from `/proc/<pid>/task/<tid>/syscall`, or `nil` when that file
    /// said `running` (or could not be read). `-1` means blocked outside a syscall.
    public var syscall: Int32?
    /// The kernel function the thread sleeps in (`/proc/.../wchan`), `nil` if none (`0`).
    public var wchan: String?
    /// The thread's CPU time (user + system) at this sample, in nanoseconds.
    public var cpuTimeNanos: UInt64
    /// The innermost annotation active on the main thread at this sample, if any.
    public var annotation: Annotation?
    /// Whether the signal's backtrace capture timed out (e.g. in state D the signal waits for the
    /// syscall to return); the `/proc` facts are still valid, and `source` says whether perf,
    /// the scan or the stall's last stack gave frames all the same.
    public var captureTimedOut: Bool
    /// Where `frames` came from (signal, perf, scan, stale, none).
    public var source: SampleSource
    /// The thread's kernel counters at this sample, if they were read.
    public var counters: KernelCounters?
    /// `counters` minus the previous reading of this stall (for the first sample, the reading
    /// the watchdog took when it first saw the callout running); `nil` without a previous one.
    public var countersDelta: KernelCounters?
    /// What the thread waited on, when that is knowable (see `WaitFact`).
    public var wait: WaitFact?

    /// Creates a sample.
    public init(
        time: UInt64,
        frames: [Frame] = [],
        state: ThreadState,
        syscall: Int32? = nil,
        wchan: String? = nil,
        cpuTimeNanos: UInt64 = 0,
        annotation: Annotation? = nil,
        captureTimedOut: Bool = false,
        source: SampleSource? = nil,
        counters: KernelCounters? = nil,
        countersDelta: KernelCounters? = nil,
        wait: WaitFact? = nil
    ) {
        self.time = time
        self.frames = frames
        self.state = state
        self.syscall = syscall
        self.wchan = wchan
        self.cpuTimeNanos = cpuTimeNanos
        self.annotation = annotation
        self.captureTimedOut = captureTimedOut
        self.source = source ?? .assumed(hasFrames: !frames.isEmpty)
        self.counters = counters
        self.countersDelta = countersDelta
        self.wait = wait
    }

    /// The name of `syscall` from the x86_64 table (`74` → `"fsync"`), or `nil`.
    public var syscallName: String? {
        syscall.flatMap(SyscallTable.name(for:))
    }
}
