import StallwatchCore

/// What a stall is grouped by: its dominant category and its innermost app frames (frames
/// whose module is not the system's, `Frame.isSystem`, and that are not compiler-generated
/// thunks), innermost first.
///
/// A plain value; use it on any thread.
public struct SignatureKey: Sendable, Hashable, Comparable, Codable {
    /// How many app frames a signature keeps.
    public static let frameCount = 3

    /// The stall's dominant category (`other` when it has no samples).
    public var category: StallCategory
    /// Up to `frameCount` app frame names, innermost first. When no sample has an app frame,
    /// the dominant reason in brackets (`[fsync]`); `[no samples]` when there are none.
    public var frames: [String]

    /// Creates a key.
    public init(category: StallCategory, frames: [String]) {
        self.category = category
        self.frames = frames
    }

    /// `compute: App.parse ← App.load`.
    public var text: String {
        "\(category.rawValue): " + frames.joined(separator: " ← ")
    }

    /// Orders by category, then frames (for stable output).
    public static func < (lhs: SignatureKey, rhs: SignatureKey) -> Bool {
        (lhs.category.rawValue, lhs.frames.joined(separator: "\u{0}"))
            < (rhs.category.rawValue, rhs.frames.joined(separator: "\u{0}"))
    }
}

/// One stall with the classifier's verdicts and where it comes from.
///
/// A plain value; use it on any thread.
public struct AnalyzedStall: Sendable {
    /// The trace file.
    public var tracePath: String
    /// The stall.
    public var stall: Stall
    /// One verdict per sample, in sample order.
    public var classifications: [Classification]
    /// The time-weighted breakdown.
    public var breakdown: StallBreakdown
    /// The dominant category (`other` when there are no samples).
    public var category: StallCategory
    /// The signature.
    public var key: SignatureKey
    /// The index of the sample that best shows the signature (dominant category, signature frames).
    public var representativeSample: Int?
    /// How long the stall lasted; for an unfinished stall, until its last sample.
    public var durationNanos: UInt64
    /// The trace's frame budget, in nanoseconds.
    public var budgetNanos: UInt64

    /// Time beyond the budget, in nanoseconds (what the hitch ratio adds up).
    public var overrunNanos: UInt64 { durationNanos > budgetNanos ? durationNanos - budgetNanos : 0 }

    /// Analyzes `stall` of the trace at `tracePath`.
    public init(_ stall: Stall, tracePath: String, budget: Duration, classifier: Classifier) {
        self.tracePath = tracePath
        self.stall = stall
        budgetNanos = nanoseconds(budget)
        let classifications = classifier.classify(stall.samples)
        let breakdown = StallBreakdown(samples: stall.samples, classifications: classifications, end: stall.end)
        let category = breakdown.dominant ?? .other
        self.classifications = classifications
        self.breakdown = breakdown
        self.category = category
        let reached = stall.end ?? stall.samples.last?.time ?? stall.start
        durationNanos = reached > stall.start ? reached - stall.start : 0

        // The most frequent app-frame prefix among samples of the dominant category.
        var counts: [[String]: (count: Int, first: Int)] = [:]
        for (index, sample) in stall.samples.enumerated() where classifications[index].category == category {
            let frames = Array(
                sample.frames.filter { !$0.isSystem && !isCompilerGenerated($0) }.prefix(SignatureKey.frameCount)
                    .map(frameName))
            guard !frames.isEmpty else { continue }
            counts[frames] = ((counts[frames]?.count ?? 0) + 1, counts[frames]?.first ?? index)
        }
        if let best = counts.max(by: { ($0.value.count, -$0.value.first) < ($1.value.count, -$1.value.first) }) {
            key = SignatureKey(category: category, frames: best.key)
            representativeSample = best.value.first
        } else if let reason = breakdown.topReasons.first(where: { $0.category == category }) {
            key = SignatureKey(category: category, frames: ["[\(reason.reason)]"])
            representativeSample = classifications.firstIndex { $0.category == category }
        } else {
            key = SignatureKey(category: category, frames: ["[no samples]"])
            representativeSample = nil
        }
    }

    /// `file:line` of the callout's registration.
    public var site: String { "\(stall.callout.file):\(stall.callout.line)" }
}

/// Whether a frame is glue the compiler generated (thunks, partial-apply forwarders, merged
/// or outlined functions): it tells nothing about the app, so signatures skip it.
func isCompilerGenerated(_ frame: Frame) -> Bool {
    if frame.file?.hasSuffix("<compiler-generated>") == true { return true }
    guard let symbol = frame.symbol else { return false }
    for prefix in ["reabstraction thunk", "partial apply", "merged ", "thunk for ", "outlined "]
    where symbol.hasPrefix(prefix) {
        return true
    }
    return false
}

/// How a frame is named in signatures and stacks: its symbol, else its address in hex.
public func frameName(_ frame: Frame) -> String {
    frame.symbol ?? "0x" + String(frame.address, radix: 16)
}

func nanoseconds(_ duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0 else { return 0 }
    return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
}
