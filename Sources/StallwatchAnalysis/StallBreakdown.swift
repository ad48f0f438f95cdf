import StallwatchCore

/// Time attributed to one reason within a stall.
///
/// A plain value; use it on any thread.
public struct ReasonTime: Sendable, Hashable, Codable {
    /// The category the reason belongs to.
    public var category: StallCategory
    /// The reason (`fsync`, `sqlite3_step`, an app function…).
    public var reason: String
    /// The time attributed to it, in nanoseconds.
    public var nanos: UInt64
    /// Its fraction of the stall's attributed time (0…1).
    public var share: Double

    /// Creates a reason's time.
    public init(category: StallCategory, reason: String, nanos: UInt64, share: Double) {
        self.category = category
        self.reason = reason
        self.nanos = nanos
        self.share = share
    }
}

/// What a stall was made of: time per category, the dominant category, the top reasons.
///
/// Time-weighted by `StallAccounting`: each sample stands for the time until the next sample,
/// the last one until the stall's end (nothing if the stall is unfinished), and the first one
/// also for the time before it (the budget that elapsed before detection). When no time can
/// be attributed (the only sample of an unfinished stall that began when it was taken), shares
/// are by sample count and all `nanos` are 0. A plain value; use it on any thread.
public struct StallBreakdown: Sendable, Hashable, Codable {
    /// Attributed nanoseconds per category; every category is present (0 if none).
    public var nanos: [StallCategory: UInt64] {
        get { Self.dictionary(categoryNanos) }
        set { categoryNanos = Self.array(newValue) }
    }
    /// The fraction (0…1) of the stall per category; every category is present.
    public var shares: [StallCategory: Double] {
        get { Self.dictionary(categoryShares) }
        set { categoryShares = Self.array(newValue) }
    }
    /// The total attributed time, in nanoseconds.
    public var totalNanos: UInt64
    /// The category with the largest share, `nil` when the stall has no samples. Ties go to
    /// the category listed first in `StallCategory.allCases`.
    public var dominant: StallCategory?
    /// The dominant category's share (0…1), 0 when there are no samples.
    public var dominantShare: Double
    /// The reasons, largest first (at most the number asked for).
    public var topReasons: [ReasonTime]
    /// The number of samples weighed.
    public var sampleCount: Int

    /// `nanos` and `shares` by `StallCategory.ordinal` (lanes past the last category are 0):
    /// fixed-size values, neither dictionaries nor arrays, as one breakdown is made per stall
    /// and these then cost no allocation.
    @usableFromInline var categoryNanos: SIMD8<UInt64>
    @usableFromInline var categoryShares: SIMD8<Double>

    /// Creates a breakdown.
    public init(
        nanos: [StallCategory: UInt64], shares: [StallCategory: Double], totalNanos: UInt64,
        dominant: StallCategory?, dominantShare: Double, topReasons: [ReasonTime],
        sampleCount: Int
    ) {
        self.init(
            nanos: Self.array(nanos), shares: Self.array(shares), totalNanos: totalNanos, dominant: dominant,
            dominantShare: dominantShare, topReasons: topReasons, sampleCount: sampleCount)
    }

    private init(
        nanos: SIMD8<UInt64>, shares: SIMD8<Double>, totalNanos: UInt64, dominant: StallCategory?,
        dominantShare: Double,
        topReasons: [ReasonTime], sampleCount: Int
    ) {
        categoryNanos = nanos
        categoryShares = shares
        self.totalNanos = totalNanos
        self.dominant = dominant
        self.dominantShare = dominantShare
        self.topReasons = topReasons
        self.sampleCount = sampleCount
    }

    /// The attributed nanoseconds of `category`.
    public func nanos(for category: StallCategory) -> UInt64 {
        categoryNanos[category.ordinal]
    }

    /// Adds each category's attributed nanoseconds to `totals` (by `StallCategory.ordinal`).
    /// Inlinable, so a caller in another module reads the breakdown in place instead of
    /// copying it first. Pure; any thread.
    @inlinable
    package func addCategoryNanos(to totals: inout [UInt64]) {
        for index in totals.indices { totals[index] += categoryNanos[index] }
    }

    /// The fraction (0…1) of the attributed time spent in `category` (inlinable, so a caller
    /// in another module reads the breakdown in place).
    @inlinable
    public func share(of category: StallCategory) -> Double {
        categoryShares[category.ordinal]
    }

    private static func dictionary<Value>(_ values: SIMD8<Value>) -> [StallCategory: Value] {
        Dictionary(uniqueKeysWithValues: StallCategory.allCases.map { ($0, values[$0.ordinal]) })
    }

    private static func array<Value: AdditiveArithmetic>(_ values: [StallCategory: Value]) -> SIMD8<Value> {
        var result = SIMD8<Value>()
        for category in StallCategory.allCases { result[category.ordinal] = values[category] ?? .zero }
        return result
    }

    private enum CodingKeys: String, CodingKey {
        case nanos, shares, totalNanos, dominant, dominantShare, topReasons, sampleCount
    }

    /// Decodes the keys the synthesized conformance used (before the maps became arrays).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            nanos: try container.decode([StallCategory: UInt64].self, forKey: .nanos),
            shares: try container.decode([StallCategory: Double].self, forKey: .shares),
            totalNanos: try container.decode(UInt64.self, forKey: .totalNanos),
            dominant: try container.decodeIfPresent(StallCategory.self, forKey: .dominant),
            dominantShare: try container.decode(Double.self, forKey: .dominantShare),
            topReasons: try container.decode([ReasonTime].self, forKey: .topReasons),
            sampleCount: try container.decode(Int.self, forKey: .sampleCount))
    }

    /// Encodes the same keys.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(nanos, forKey: .nanos)
        try container.encode(shares, forKey: .shares)
        try container.encode(totalNanos, forKey: .totalNanos)
        try container.encodeIfPresent(dominant, forKey: .dominant)
        try container.encode(dominantShare, forKey: .dominantShare)
        try container.encode(topReasons, forKey: .topReasons)
        try container.encode(sampleCount, forKey: .sampleCount)
    }
}

extension Classifier {
    /// The time-weighted breakdown of `stall` (`StallAccounting`'s rule, the report's),
    /// keeping the `maxReasons` largest reasons.
    public func breakdown(of stall: Stall, maxReasons: Int = 5) -> StallBreakdown {
        var sorted = stall
        sorted.samples.sort { $0.time < $1.time }
        return StallBreakdown(
            samples: sorted.samples, classifications: sorted.samples.map(classify),
            weights: StallAccounting.sampleWeights(sorted), maxReasons: maxReasons)
    }
}

extension StallBreakdown {
    /// Weighs already-classified samples by `weights` (`weights[i]` nanoseconds for
    /// `samples[i]`, as `StallAccounting.sampleWeights(_:)` gives): for callers that classify
    /// once and reuse the verdicts.
    public init(
        samples: [Sample], classifications: [Classification], weights: [UInt64], maxReasons: Int = 5
    ) {
        require(samples.count == classifications.count, "one classification per sample")
        require(samples.count == weights.count, "one weight per sample")
        let total = weights.reduce(0, +)
        // With no measurable time, every sample counts once so the verdict still shows.
        var weigher = Weigher()
        for index in classifications.indices {
            weigher.add(
                classifications[index].category, classifications[index].reason, units: total == 0 ? 1 : weights[index])
        }
        self = weigher.breakdown(totalNanos: total, sampleCount: samples.count, maxReasons: maxReasons)
    }

    /// Adds up a stall's samples' verdicts, in time order, into its breakdown: a run of samples
    /// with the same verdict may be added at once (its units summed). The one rule every
    /// breakdown is made by.
    package struct Weigher {
        /// Units by `StallCategory.ordinal`.
        private var perCategory = SIMD8<UInt64>()
        // The reasons in the order first seen: the first one held here (most stalls have one),
        // the rest found by a linear search while they are few (a stall has a handful, whose
        // strings are mostly shared, so compare at once), by a dictionary beyond that.
        private var first: (key: ReasonKey, units: UInt64)?
        private var reasons: [(key: ReasonKey, units: UInt64)] = []
        private var reasonIndex: [ReasonKey: Int] = [:]
        // Samples in a row mostly share their verdict: each run of equal ones is added at once,
        // its reason hashed once, not per sample.
        private var run: (key: ReasonKey, units: UInt64)?
        private var unitTotal: UInt64 = 0

        package init() {}

        /// Adds `units` of `category` for `reason`: the sample's weight in nanoseconds, or 1 per
        /// sample when the stall's samples have no measurable time.
        package mutating func add(_ category: StallCategory, _ reason: String, units: UInt64) {
            unitTotal += units
            if let current = run, current.key.category == category, current.key.reason == reason {
                run = (current.key, current.units + units)
            } else {
                flush()
                run = (ReasonKey(category: category, reason: reason), units)
            }
        }

        private mutating func flush() {
            guard let run else { return }
            perCategory[run.key.category.ordinal] += run.units
            guard let held = first else {
                first = run
                return
            }
            if held.key == run.key {
                first = (held.key, held.units + run.units)
                return
            }
            let slot: Int?
            if reasons.count <= StallBreakdown.linearReasons {
                slot = reasons.firstIndex { $0.key == run.key }
            } else {
                if reasonIndex.isEmpty {
                    for (index, reason) in reasons.enumerated() { reasonIndex[reason.key] = index }
                }
                slot = reasonIndex[run.key]
            }
            if let slot {
                reasons[slot].units += run.units
            } else {
                if !reasonIndex.isEmpty { reasonIndex[run.key] = reasons.count }
                reasons.append((run.key, run.units))
            }
        }

        /// The breakdown of what was added: `totalNanos` is the samples' summed weight (0 when
        /// units were sample counts), `sampleCount` how many there were.
        package mutating func breakdown(totalNanos total: UInt64, sampleCount: Int, maxReasons: Int = 5)
            -> StallBreakdown
        {
            flush()
            run = nil
            var dominant: StallCategory?
            var dominantUnits: UInt64 = 0
            for ordinal in 0..<StallCategory.count where perCategory[ordinal] > dominantUnits {
                dominant = StallCategory(ordinal: ordinal)
                dominantUnits = perCategory[ordinal]
            }
            let unitTotal = unitTotal
            func time(_ reason: (key: ReasonKey, units: UInt64)) -> ReasonTime {
                ReasonTime(
                    category: reason.key.category, reason: reason.key.reason, nanos: total == 0 ? 0 : reason.units,
                    share: Double(reason.units) / Double(unitTotal))
            }
            var top: [ReasonTime] = []
            if let first {
                if reasons.isEmpty {
                    if first.units > 0 && maxReasons > 0 { top = [time(first)] }
                } else {
                    let all = [first] + reasons
                    top = all.indices.sorted {
                        all[$0].units != all[$1].units ? all[$0].units > all[$1].units : $0 < $1
                    }
                    .filter { all[$0].units > 0 }
                    .prefix(max(0, maxReasons))
                    .map { time(all[$0]) }
                }
            }
            var shares = SIMD8<Double>()
            if unitTotal > 0 {
                for ordinal in 0..<StallCategory.count {
                    shares[ordinal] = Double(perCategory[ordinal]) / Double(unitTotal)
                }
            }
            if total == 0 { perCategory = SIMD8() }
            return StallBreakdown(
                nanos: perCategory, shares: shares, totalNanos: total, dominant: dominant,
                dominantShare: unitTotal == 0 ? 0 : Double(dominantUnits) / Double(unitTotal),
                topReasons: top, sampleCount: sampleCount)
        }
    }
}

extension StallBreakdown {
    /// Up to how many reasons a breakdown looks for one by one.
    fileprivate static let linearReasons = 16
}

private struct ReasonKey: Hashable {
    var category: StallCategory
    var reason: String
}
