import StallwatchCore

/// What stalls are grouped by: the dominant category and the innermost app frames (frames
/// whose module is not the system's, `Frame.isSystem`, and that are not compiler-generated
/// thunks), innermost first. Two stalls with equal keys are "the same stall" in a report.
///
/// A plain value; use it on any thread.
public struct SignatureKey: Sendable, Hashable, Comparable, Codable {
    /// How many app frames a signature keeps.
    static let frameCount = 3

    /// The stall's dominant category (`other` when it has no samples).
    public var category: StallCategory
    /// Up to three app frame names, innermost first. When no sample has an app frame, the
    /// dominant reason in brackets (`[fsync]`); `[no samples]` when there are none.
    public var frames: [String]

    init(category: StallCategory, frames: [String]) {
        self.category = category
        self.frames = frames
    }

    /// The key as one line: `compute: App.parse ← App.load`.
    public var text: String {
        "\(category.rawValue): " + frames.joined(separator: " ← ")
    }

    /// Orders by category name, then frames, so listings are stable.
    public static func < (lhs: SignatureKey, rhs: SignatureKey) -> Bool {
        (lhs.category.rawValue, lhs.frames.joined(separator: "\u{0}"))
            < (rhs.category.rawValue, rhs.frames.joined(separator: "\u{0}"))
    }
}

/// One stall with the classifier's verdict on each sample, its breakdown and its signature:
/// what `ReportBuilder.analyze(_:)` returns and the exporters and `StallText` take.
///
/// A plain value; use it on any thread.
public struct AnalyzedStall: Sendable {
    /// The path of the trace the stall was read from.
    public var tracePath: String
    /// The stall as decoded, samples in time order.
    public var stall: Stall
    /// The classifier's verdict on each sample (`classifications[i]` is `stall.samples[i]`'s).
    public var classifications: [Classification]
    /// The time-weighted breakdown of the samples by category and reason.
    public var breakdown: StallBreakdown
    /// The category with the largest share of the breakdown (`other` when there are no
    /// samples).
    public var category: StallCategory
    /// What the stall is grouped by in a report.
    public var key: SignatureKey
    /// The index of the sample that best shows the signature (the first of the dominant
    /// category with the signature's frames), `nil` without samples.
    public var representativeSample: Int?
    /// How long the stall lasted, in nanoseconds; for an unfinished stall, until its last
    /// sample.
    public var durationNanos: UInt64
    /// The frame budget of the stall's trace, in nanoseconds.
    public var budgetNanos: UInt64

    /// The time beyond the budget, in nanoseconds: what the hitch ratio adds up.
    public var overrunNanos: UInt64 { durationNanos > budgetNanos ? durationNanos - budgetNanos : 0 }

    /// Classifies `stall`'s samples with `classifier` and finds its signature; `tracePath`
    /// and `budget` (the trace header's) are kept for reports. Pure; any thread.
    public init(_ stall: Stall, tracePath: String, budget: Duration, classifier: Classifier) {
        self.tracePath = tracePath
        self.stall = stall
        budgetNanos = budget.nanoseconds
        // A stall's samples are mostly the same stack in the same state: classify each distinct
        // sample once. The verdict depends on the sample but not on when it was taken or the
        // CPU time so far, so those are left out of the key (anything else a sample gains stays in).
        var verdicts: [Sample: Classification] = [:]
        let classifications = stall.samples.map { sample in
            var key = sample
            key.time = 0
            key.cpuTimeNanos = 0
            if let known = verdicts[key] { return known }
            let verdict = classifier.classify(sample)
            verdicts[key] = verdict
            return verdict
        }
        let breakdown = StallBreakdown(samples: stall.samples, classifications: classifications, end: stall.end)
        let category = breakdown.dominant ?? .other
        self.classifications = classifications
        self.breakdown = breakdown
        self.category = category
        let reached = stall.end ?? stall.samples.last?.time ?? stall.start
        durationNanos = reached > stall.start ? reached - stall.start : 0

        // The most frequent app-frame prefix among samples of the dominant category.
        // Samples of one stall repeat the same addresses: each address is judged and named
        // once, and prefixes are counted as name numbers (the module tests are string searches
        // and hashing names per sample was most of a fleet report's time).
        var names: [String] = []
        var nameNumbers: [String: Int] = [:]
        var appFrameName: [UInt64: Int] = [:]  // -1: not an app frame
        func appFrame(_ frame: Frame) -> Int {
            if let known = appFrameName[frame.address] { return known }
            var number = -1
            if !frame.isSystem && !isCompilerGenerated(frame) {
                let name = frameName(frame)
                number = nameNumbers[name] ?? names.count
                if number == names.count {
                    names.append(name)
                    nameNumbers[name] = number
                }
            }
            appFrameName[frame.address] = number
            return number
        }
        var counts: [[Int]: (count: Int, first: Int)] = [:]
        for (index, sample) in stall.samples.enumerated() where classifications[index].category == category {
            var frames: [Int] = []
            for frame in sample.frames {
                let number = appFrame(frame)
                guard number >= 0 else { continue }
                frames.append(number)
                if frames.count == SignatureKey.frameCount { break }
            }
            guard !frames.isEmpty else { continue }
            counts[frames] = ((counts[frames]?.count ?? 0) + 1, counts[frames]?.first ?? index)
        }
        if let best = counts.max(by: { ($0.value.count, -$0.value.first) < ($1.value.count, -$1.value.first) }) {
            key = SignatureKey(category: category, frames: best.key.map { names[$0] })
            representativeSample = best.value.first
        } else if let reason = breakdown.topReasons.first(where: { $0.category == category }) {
            key = SignatureKey(category: category, frames: ["[\(reason.reason)]"])
            representativeSample = classifications.firstIndex { $0.category == category }
        } else {
            key = SignatureKey(category: category, frames: ["[no samples]"])
            representativeSample = nil
        }
    }

    /// Where the stalled work was registered, `#fileID:#line`.
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
func frameName(_ frame: Frame) -> String {
    frame.symbol ?? "0x" + String(frame.address, radix: 16)
}
