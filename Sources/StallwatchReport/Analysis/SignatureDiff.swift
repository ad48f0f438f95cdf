import StallwatchCore

/// How the stall signatures of two runs compare: signatures only in the new run, only in the
/// base, and those whose total time or count moved by more than a threshold. What `stallwatch
/// diff` prints (`render(colour:)`) or encodes as JSON (`JSONOutput.encode(_:)`).
///
/// A plain value; use it on any thread.
package struct SignatureDiff: Sendable, Hashable, Codable {
    /// One signature's numbers in both runs (0 where it is absent).
    package struct Entry: Sendable, Hashable, Codable {
        /// The signature's dominant category.
        package var category: StallCategory
        /// The signature's app frames, innermost first.
        package var frames: [String]
        /// How many stalls of the signature the base run had.
        package var baseCount: Int
        /// How many the new run had.
        package var newCount: Int
        /// Their summed duration in the base run, in milliseconds.
        package var baseTotalMs: Double
        /// Their summed duration in the new run, in milliseconds.
        package var newTotalMs: Double
        /// The change of the summed duration, in percent of the base's (`nil`, JSON `null`,
        /// when the base has none).
        @NullWhenAbsent package var totalChangePercent: Double?
    }

    /// The paths of the base run's traces.
    package var base: [String]
    /// The paths of the new run's traces.
    package var new: [String]
    /// A change counts when it is more than this many percent of the base.
    package var thresholdPercent: Double
    /// Signatures only in the new run.
    package var added: [Entry] = []
    /// Signatures only in the base run.
    package var gone: [Entry] = []
    /// Signatures whose total time or count grew by more than the threshold.
    package var worse: [Entry] = []
    /// Signatures whose total time or count shrank by more than the threshold, neither
    /// growing past it.
    package var better: [Entry] = []
    /// Signatures that moved by no more than the threshold.
    package var unchanged: [Entry] = []

    /// Compares the signatures of two runs (each from `ReportBuilder.signatures(_:)`, largest
    /// first); the paths only label the result. Pure; any thread.
    package init(
        base: [StallReport.Signature], new: [StallReport.Signature], basePaths: [String], newPaths: [String],
        thresholdPercent: Double
    ) {
        self.base = basePaths
        self.new = newPaths
        self.thresholdPercent = thresholdPercent
        var baseByKey: [SignatureKey: StallReport.Signature] = [:]
        for signature in base { baseByKey[signature.key] = signature }
        var newByKey: [SignatureKey: StallReport.Signature] = [:]
        for signature in new { newByKey[signature.key] = signature }
        func change(_ before: Double, _ after: Double) -> Double? {
            before == 0 ? nil : round((after - before) / before * 100, 1)
        }
        // Walk both lists in their order (largest first) so the output is stable.
        var seen = Set<SignatureKey>()
        for signature in new + base {
            let key = signature.key
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
    }
}
