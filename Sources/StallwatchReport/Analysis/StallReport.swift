import StallwatchCore

/// The summary of one or more traces: what `stallwatch report` prints and `--json` encodes.
/// The JSON schema (documented in `docs/cli.md`) is versioned by `schemaVersion`; times are
/// milliseconds unless a name says otherwise, and absent measurements are `null`.
///
/// A plain value; use it on any thread.
public struct StallReport: Sendable, Hashable, Codable {
    /// One input trace.
    public struct TraceInfo: Sendable, Hashable, Codable {
        /// The path given.
        public var path: String
        /// The process name from the header (`""` without a header).
        public var process: String
        /// The process id (0 without a header).
        public var pid: UInt32
        /// `stalls` or `full` (`unknown` without a header).
        public var mode: String
        /// The file's size.
        public var bytes: Int
        /// From the header's start to the last timestamp in the trace.
        public var runTimeSeconds: Double
        /// How many stalls it holds.
        public var stalls: Int
        /// The truncation or damage the reader met, one line each (empty for a whole trace).
        public var problems: [String]
    }

    /// What frame clocks managed.
    public struct FrameStats: Sendable, Hashable, Codable {
        /// Frames due.
        public var expected: UInt64
        /// Frames delivered.
        public var delivered: UInt64
        /// Frames dropped because the loop was busy.
        public var dropped: UInt64
        /// Delivered frames per second of clock time.
        public var fps: Double
    }

    /// Stall counts.
    public struct StallStats: Sendable, Hashable, Codable {
        /// All stalls.
        public var total: Int
        /// Stalls that had not ended when the trace stopped.
        public var unfinished: Int
        /// Their summed duration.
        public var totalMs: Double
        /// Count per tier; every tier is present.
        public var byTier: [String: Int]
        /// Count per dominant category; every category is present.
        public var byCategory: [String: Int]
        /// Sample-attributed time per category; every category is present.
        public var categoryMs: [String: Double]
        /// Stalls at least `hang` long (tiers `hang` and `severe`).
        public var hangs: Int
    }

    /// Loop-latency percentiles from the latency histograms.
    public struct LatencyStats: Sendable, Hashable, Codable {
        /// Latencies recorded.
        public var count: UInt64
        /// Percentiles (each the lower bound of its histogram bucket, within 6.25 %).
        public var p50Ms: Double
        /// 90th percentile.
        public var p90Ms: Double
        /// 99th percentile.
        public var p99Ms: Double
        /// 99.9th percentile.
        public var p999Ms: Double
        /// The largest bucket with a value.
        public var maxMs: Double
    }

    /// A frame of a representative stack.
    public struct StackFrame: Sendable, Hashable, Codable {
        /// The symbol, or the address in hex.
        public var symbol: String
        /// The image's path (`null` if unknown).
        public var module: String?
        /// `file:line` from debug information (`null` if unknown).
        public var source: String?
        /// Whether the frame is the system's (not the app's).
        public var system: Bool

        private enum CodingKeys: String, CodingKey { case symbol, module, source, system }

        /// Encodes every key (`null` when unknown).
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(symbol, forKey: .symbol)
            try container.encode(module, forKey: .module)
            try container.encode(source, forKey: .source)
            try container.encode(system, forKey: .system)
        }
    }

    /// Where a signature's work was registered, and how often.
    public struct SiteCount: Sendable, Hashable, Codable {
        /// `#fileID:#line`.
        public var site: String
        /// Stalls from it.
        public var count: Int
    }

    /// A stall that shows a signature best (its longest).
    public struct StallReference: Sendable, Hashable, Codable {
        /// The trace.
        public var trace: String
        /// The stall id, for `stallwatch show TRACE --stall ID`.
        public var stall: UInt64
    }

    /// Stalls grouped by dominant category and top app frames.
    public struct Signature: Sendable, Hashable, Codable {
        /// The dominant category.
        public var category: String
        /// Up to three app frames, innermost first (see `SignatureKey`).
        public var frames: [String]
        /// Stalls with this signature.
        public var count: Int
        /// Their summed duration.
        public var totalMs: Double
        /// The longest.
        public var maxMs: Double
        /// Count per tier (tiers with none left out).
        public var tiers: [String: Int]
        /// Fraction of sample-attributed time per category (0…1), every category present.
        public var categoryShares: [String: Double]
        /// The classifier's top reason in the dominant category over these stalls (`""` if none).
        public var reason: String
        /// The most frequent posting site.
        public var site: String
        /// Every posting site, most frequent first.
        public var sites: [SiteCount]
        /// The longest stall's representative sample, innermost frame first.
        public var stack: [StackFrame]
        /// The longest stall.
        public var example: StallReference
    }

    /// The schema version (1).
    public var schemaVersion = 1
    /// The traces read.
    public var traces: [TraceInfo]
    /// The traces' run times, summed.
    public var runTimeSeconds: Double
    /// Fraction of run time spent in callouts (`full`-mode traces only, else `null`).
    public var loopUtilisation: Double?
    /// Frame-clock totals (`null` when no frame clock ran).
    public var frames: FrameStats?
    /// Milliseconds of stall time beyond the budget per second of run time.
    public var hitchRatioMsPerSecond: Double
    /// Stall counts.
    public var stalls: StallStats
    /// Loop-latency percentiles (`null` without latency histograms).
    public var loopLatency: LatencyStats?
    /// How many distinct signatures there are.
    public var signatureCount: Int
    /// The top signatures, by total time (then count).
    public var signatures: [Signature]

    private enum CodingKeys: String, CodingKey {
        case schemaVersion, traces, runTimeSeconds, loopUtilisation, frames, hitchRatioMsPerSecond, stalls
        case loopLatency, signatureCount, signatures
    }

    /// Encodes every key, `null` for absent measurements, so the schema does not move.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(schemaVersion, forKey: .schemaVersion)
        try container.encode(traces, forKey: .traces)
        try container.encode(runTimeSeconds, forKey: .runTimeSeconds)
        try encodeOrNull(loopUtilisation, .loopUtilisation, &container)
        try encodeOrNull(frames, .frames, &container)
        try container.encode(hitchRatioMsPerSecond, forKey: .hitchRatioMsPerSecond)
        try container.encode(stalls, forKey: .stalls)
        try encodeOrNull(loopLatency, .loopLatency, &container)
        try container.encode(signatureCount, forKey: .signatureCount)
        try container.encode(signatures, forKey: .signatures)
    }

    private func encodeOrNull<Value: Encodable>(
        _ value: Value?, _ key: CodingKeys, _ container: inout KeyedEncodingContainer<CodingKeys>
    ) throws {
        if let value { try container.encode(value, forKey: key) } else { try container.encodeNil(forKey: key) }
    }
}
