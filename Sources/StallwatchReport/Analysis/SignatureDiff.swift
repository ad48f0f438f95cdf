/// How the stall signatures of two runs compare: signatures only in the new run, only in the
/// base, and those whose total time or count moved by more than a threshold.
///
/// A plain value; use it on any thread.
public struct SignatureDiff: Sendable, Hashable, Codable {
    /// One signature's numbers in both runs (0 where absent).
    public struct Entry: Sendable, Hashable, Codable {
        /// The dominant category.
        public var category: String
        /// The app frames, innermost first.
        public var frames: [String]
        /// Stalls in the base run.
        public var baseCount: Int
        /// Stalls in the new run.
        public var newCount: Int
        /// Total stall time in the base run.
        public var baseTotalMs: Double
        /// Total stall time in the new run.
        public var newTotalMs: Double
        /// Change of total time, in percent of the base (`null` when the base has none).
        public var totalChangePercent: Double?

        private enum CodingKeys: String, CodingKey {
            case category, frames, baseCount, newCount, baseTotalMs, newTotalMs, totalChangePercent
        }

        /// Encodes every key (`null` for no percentage).
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(category, forKey: .category)
            try container.encode(frames, forKey: .frames)
            try container.encode(baseCount, forKey: .baseCount)
            try container.encode(newCount, forKey: .newCount)
            try container.encode(baseTotalMs, forKey: .baseTotalMs)
            try container.encode(newTotalMs, forKey: .newTotalMs)
            try container.encode(totalChangePercent, forKey: .totalChangePercent)
        }
    }

    /// The base trace(s).
    public var base: [String]
    /// The new trace(s).
    public var new: [String]
    /// A change counts when it is more than this many percent of the base.
    public var thresholdPercent: Double
    /// Only in the new run.
    public var added: [Entry]
    /// Only in the base run.
    public var gone: [Entry]
    /// Total time or count grew by more than the threshold.
    public var worse: [Entry]
    /// Total time or count shrank by more than the threshold, and neither grew past it.
    public var better: [Entry]
    /// Within the threshold.
    public var unchanged: [Entry]

    /// Compares signature lists.
    public init(
        base: [StallReport.Signature], new: [StallReport.Signature], basePaths: [String], newPaths: [String],
        thresholdPercent: Double
    ) {
        self.base = basePaths
        self.new = newPaths
        self.thresholdPercent = thresholdPercent
        struct Key: Hashable {
            var category: String
            var frames: [String]
        }
        var baseByKey: [Key: StallReport.Signature] = [:]
        for signature in base { baseByKey[Key(category: signature.category, frames: signature.frames)] = signature }
        var newByKey: [Key: StallReport.Signature] = [:]
        for signature in new { newByKey[Key(category: signature.category, frames: signature.frames)] = signature }
        var added: [Entry] = []
        var gone: [Entry] = []
        var worse: [Entry] = []
        var better: [Entry] = []
        var unchanged: [Entry] = []
        func change(_ before: Double, _ after: Double) -> Double? {
            before == 0 ? nil : round((after - before) / before * 100, 1)
        }
        // Walk both lists in their order (largest first) so the output is stable.
        var seen = Set<Key>()
        for signature in new + base {
            let key = Key(category: signature.category, frames: signature.frames)
            guard seen.insert(key).inserted else { continue }
            let before = baseByKey[key]
            let after = newByKey[key]
            let entry = Entry(
                category: key.category, frames: key.frames, baseCount: before?.count ?? 0, newCount: after?.count ?? 0,
                baseTotalMs: before?.totalMs ?? 0, newTotalMs: after?.totalMs ?? 0,
                totalChangePercent: change(before?.totalMs ?? 0, after?.totalMs ?? 0))
            guard let before, let after else {
                if before == nil { added.append(entry) } else { gone.append(entry) }
                continue
            }
            let timeChange = entry.totalChangePercent ?? 0
            let countChange = change(Double(before.count), Double(after.count)) ?? 0
            if timeChange > thresholdPercent || countChange > thresholdPercent {
                worse.append(entry)
            } else if timeChange < -thresholdPercent || countChange < -thresholdPercent {
                better.append(entry)
            } else {
                unchanged.append(entry)
            }
        }
        self.added = added
        self.gone = gone
        self.worse = worse
        self.better = better
        self.unchanged = unchanged
    }

    /// The text of `stallwatch diff`.
    func render(colour: Bool) -> String {
        let style = Style(enabled: colour)
        var lines = [
            style.bold("Signature diff") + ": \(base.joined(separator: ", ")) → \(new.joined(separator: ", ")) "
                + "(threshold \(format(thresholdPercent, 1)) %)"
        ]
        func section(_ title: String, _ entries: [Entry], _ mark: String, _ paint: (String) -> String) {
            lines.append("")
            lines.append(style.bold("\(title) (\(entries.count))"))
            for entry in entries {
                let change = entry.totalChangePercent.map { " (\($0 >= 0 ? "+" : "")\(format($0, 1)) %)" } ?? ""
                lines.append(
                    "  " + paint(mark) + " \(entry.category): \(entry.frames.joined(separator: " ← "))  "
                        + "\(entry.baseCount) → \(plural(entry.newCount, "stall")), \(format(entry.baseTotalMs, 1)) → "
                        + "\(format(entry.newTotalMs, 1)) ms\(change)")
            }
        }
        section("New", added, "+", style.red)
        section("Worse", worse, "▲", style.red)
        section("Better", better, "▼", style.green)
        section("Gone", gone, "-", style.green)
        lines.append("")
        lines.append("Unchanged: " + plural(unchanged.count, "signature"))
        return lines.joined(separator: "\n") + "\n"
    }
}
