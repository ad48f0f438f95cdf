/// What a stalled thread was doing at one instant of a stall: its stack and kernel state.
///
/// A plain value; use it on any thread.
public struct Sample: Sendable, Hashable, Codable {
    /// When the sample was taken, in `CLOCK_MONOTONIC` nanoseconds.
    public var time: UInt64
    /// The thread sampled (its Linux tid), 0 when not known (a version 1 trace).
    public var tid: Int32
    /// The look it was taken at, when one look sampled several threads (a starved pool's
    /// threads): the stall's samples with the same look number share the time until the next
    /// look (`StallAccounting`). `nil`: a look of its own, the sample of one thread.
    public var look: UInt32?
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
    /// How the chain of awaiting callers at the end of `frames` (the frames marked `isAsync`)
    /// ended; nil when the sample holds no async frame.
    public var asyncChainEnd: AsyncChainEnd?
    /// The thread's kernel counters at this sample, if they were read.
    public var counters: KernelCounters? {
        get { kernel?.facts.counters }
        set { updateKernel { $0.counters = newValue } }
    }
    /// `counters` minus the previous reading of this stall (for the first sample, the reading
    /// the watchdog took when it first saw the callout running); `nil` without a previous one.
    public var countersDelta: KernelCounters? {
        get { kernel?.facts.countersDelta }
        set { updateKernel { $0.countersDelta = newValue } }
    }
    /// What the thread waited on, when that is knowable (see `WaitFact`).
    public var wait: WaitFact? {
        get { kernel?.facts.wait }
        set { updateKernel { $0.wait = newValue } }
    }

    /// `counters`, `countersDelta` and `wait`, boxed, `nil` when all three are: together they
    /// are three quarters of a sample's size, so a sample without them (every sample of an
    /// older trace, and many of a fleet) stays small to copy and to hold by the million.
    private var kernel: KernelBox?

    private mutating func updateKernel(_ change: (inout KernelBox.Facts) -> Void) {
        var facts = kernel?.facts ?? KernelBox.Facts()
        change(&facts)
        kernel = facts.isEmpty ? nil : KernelBox(facts)
    }

    /// An immutable box compared and hashed by its contents, so `Sample` stays a plain value.
    private final class KernelBox: Sendable, Hashable {
        struct Facts: Sendable, Hashable {
            var counters: KernelCounters?
            var countersDelta: KernelCounters?
            var wait: WaitFact?

            var isEmpty: Bool { counters == nil && countersDelta == nil && wait == nil }
        }

        let facts: Facts

        init(_ facts: Facts) { self.facts = facts }

        static func == (lhs: KernelBox, rhs: KernelBox) -> Bool { lhs === rhs || lhs.facts == rhs.facts }

        func hash(into hasher: inout Hasher) { hasher.combine(facts) }
    }

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
        asyncChainEnd: AsyncChainEnd? = nil,
        counters: KernelCounters? = nil,
        countersDelta: KernelCounters? = nil,
        wait: WaitFact? = nil,
        tid: Int32 = 0,
        look: UInt32? = nil
    ) {
        self.time = time
        self.tid = tid
        self.look = look
        self.frames = frames
        self.state = state
        self.syscall = syscall
        self.wchan = wchan
        self.cpuTimeNanos = cpuTimeNanos
        self.annotation = annotation
        self.captureTimedOut = captureTimedOut
        self.source = source ?? .assumed(hasFrames: !frames.isEmpty)
        self.asyncChainEnd = asyncChainEnd
        if counters != nil || countersDelta != nil || wait != nil {
            kernel = KernelBox(KernelBox.Facts(counters: counters, countersDelta: countersDelta, wait: wait))
        }
    }

    private enum CodingKeys: String, CodingKey {
        case time, tid, look, frames, state, syscall, wchan, cpuTimeNanos, annotation, captureTimedOut, source, counters
        case countersDelta, wait, asyncChainEnd
    }

    /// Decodes the keys `encode(to:)` writes; absent ones take their defaults.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            time: try container.decode(UInt64.self, forKey: .time),
            frames: try container.decode([Frame].self, forKey: .frames),
            state: try container.decode(ThreadState.self, forKey: .state),
            syscall: try container.decodeIfPresent(Int32.self, forKey: .syscall),
            wchan: try container.decodeIfPresent(String.self, forKey: .wchan),
            cpuTimeNanos: try container.decode(UInt64.self, forKey: .cpuTimeNanos),
            annotation: try container.decodeIfPresent(Annotation.self, forKey: .annotation),
            captureTimedOut: try container.decode(Bool.self, forKey: .captureTimedOut),
            source: try container.decode(SampleSource.self, forKey: .source),
            asyncChainEnd: try container.decodeIfPresent(AsyncChainEnd.self, forKey: .asyncChainEnd),
            counters: try container.decodeIfPresent(KernelCounters.self, forKey: .counters),
            countersDelta: try container.decodeIfPresent(KernelCounters.self, forKey: .countersDelta),
            wait: try container.decodeIfPresent(WaitFact.self, forKey: .wait),
            tid: try container.decodeIfPresent(Int32.self, forKey: .tid) ?? 0,
            look: try container.decodeIfPresent(UInt32.self, forKey: .look))
    }

    /// Encodes the same keys, leaving out the absent ones.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(time, forKey: .time)
        if tid != 0 { try container.encode(tid, forKey: .tid) }
        try container.encodeIfPresent(look, forKey: .look)
        try container.encode(frames, forKey: .frames)
        try container.encode(state, forKey: .state)
        try container.encodeIfPresent(syscall, forKey: .syscall)
        try container.encodeIfPresent(wchan, forKey: .wchan)
        try container.encode(cpuTimeNanos, forKey: .cpuTimeNanos)
        try container.encodeIfPresent(annotation, forKey: .annotation)
        try container.encode(captureTimedOut, forKey: .captureTimedOut)
        try container.encode(source, forKey: .source)
        try container.encodeIfPresent(asyncChainEnd, forKey: .asyncChainEnd)
        try container.encodeIfPresent(counters, forKey: .counters)
        try container.encodeIfPresent(countersDelta, forKey: .countersDelta)
        try container.encodeIfPresent(wait, forKey: .wait)
    }

    /// The name of `syscall` from the x86_64 table (`74` → `"fsync"`), or `nil`.
    public var syscallName: String? {
        syscall.flatMap(SyscallTable.name(for:))
    }
}
