/// Facts about a stall beyond its samples.
///
/// Raw values are stable (trace files store them). A plain value; use it on any thread.
public struct StallFlags: OptionSet, Sendable, Hashable, Codable {
    /// The bit pattern.
    public var rawValue: UInt8

    /// Creates flags from their bit pattern.
    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// The stall had not ended when the trace stopped (the process was killed or exited).
    public static let unfinished = StallFlags(rawValue: 1 << 0)
    /// The process was suspended (e.g. stopped by a debugger or SIGSTOP) during the stall,
    /// so its duration overstates what the user saw.
    public static let suspended = StallFlags(rawValue: 1 << 1)
    /// At least one sample's backtrace capture timed out.
    public static let captureTimedOut = StallFlags(rawValue: 1 << 2)
}

/// One callout that overran the frame budget, with what the main thread did meanwhile.
///
/// A plain value; use it on any thread.
public struct Stall: Sendable, Hashable, Codable {
    /// Identifies the stall within its trace.
    public var id: UInt64
    /// When the callout started, in `CLOCK_MONOTONIC` nanoseconds.
    public var start: UInt64
    /// When the callout ended, in `CLOCK_MONOTONIC` nanoseconds; `nil` if it never did.
    public var end: UInt64?
    /// The stall's tier (for an unfinished stall, the tier it had reached).
    public var tier: Tier
    /// The callout that stalled.
    public var callout: CalloutIdentity
    /// The samples taken during the stall, in time order.
    public var samples: [Sample]
    /// Extra facts (unfinished, suspended, capture timed out).
    public var flags: StallFlags
    /// Why the work was expected to be long, if the app said so (`expectLong`): the label of
    /// the scope it ran in. Such a stall is counted apart and no gate limit counts it.
    public var expected: String?
    /// The app's state when the stall was detected (`AppState`: "screen" = "Feed"…).
    public var context: [String: String]
    /// When the process was stopped during the stall (SIGSTOP, a debugger; read from a trace's
    /// `stopped` records, disjoint and in order): not the app's time, so left out of its
    /// duration, tier and sample weights (`StallAccounting`).
    public var stopped: [Range<UInt64>] = []

    /// Creates a stall. Inlinable: the decoder makes one per stall of every trace it reads.
    @inlinable
    public init(
        id: UInt64,
        start: UInt64,
        end: UInt64?,
        tier: Tier,
        callout: CalloutIdentity,
        samples: [Sample] = [],
        flags: StallFlags = [],
        expected: String? = nil,
        context: [String: String] = [:]
    ) {
        self.id = id
        self.start = start
        self.end = end
        self.tier = tier
        self.callout = callout
        self.samples = samples
        self.flags = flags
        self.expected = expected
        self.context = context
    }

    /// `end - start`, or `nil` while the stall is unfinished.
    public var duration: Duration? {
        guard let end else { return nil }
        return .nanoseconds(Int64(clamping: end >= start ? end - start : 0))
    }
}
