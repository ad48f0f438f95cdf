import StallwatchCore

/// Folded stacks (Brendan Gregg's `flamegraph.pl` input, also read by speedscope and
/// inferno): one line per distinct stack, `category;outermost;…;innermost WEIGHT`, the weight
/// in whole microseconds of sample time. Lines are sorted; zero-weight stacks are left out.
///
/// A stall without samples still takes its time: one line `category;[no samples]` (or
/// `[unfinished stall, no samples]` for one that never ended), weighted by its duration (an
/// unfinished one: as far as `drawnEnd` reaches).
///
/// Pure; use it on any thread.
package enum FoldedStacksExporter {
    /// The folded-stacks text of `stalls` (from `ReportBuilder.analyze(_:)`, of one trace or
    /// several), one `stack weight` line each. `traces` (the stalls' traces) say how far an
    /// unfinished stall without samples reaches; without them it counts its budget.
    package static func export(_ stalls: [AnalyzedStall], traces: [LoadedTrace] = []) -> String {
        // Nanoseconds per stack (`AnalyzedStall.sampleWeights`, the report's rule), rounded
        // to microseconds once per line so the lines add up to the report's total. Samples are
        // added up by their stack's number first, and each distinct stack made into a line once.
        var byStack: [SampleStackKey: (nanos: UInt64, stall: Int, sample: Int)] = [:]
        var weights: [String: UInt64] = [:]
        for (position, analyzed) in stalls.enumerated() {
            if analyzed.stall.samples.isEmpty {
                let stack = [analyzed.category.rawValue, noSamplesName(analyzed.stall)].joined(separator: ";")
                let drawn = analyzed.drawnEnd - analyzed.stall.start
                weights[stack, default: 0] += max(1_000, drawn)
                continue
            }
            for index in analyzed.stall.samples.indices where analyzed.sampleWeights[index] > 0 {
                let key = SampleStackKey(analyzed, sample: index, category: analyzed.classifications[index].category)
                byStack[key, default: (0, position, index)].nanos += analyzed.sampleWeights[index]
            }
        }
        for (nanos, position, index) in byStack.values {
            let analyzed = stalls[position]
            let stack = rootedStack(
                analyzed.stall.samples[index], category: analyzed.classifications[index].category,
                names: analyzed.frameNames(ofSample: index)
            )
            .map(sanitize).joined(separator: ";")
            weights[stack, default: 0] += nanos
        }
        return weights.map { (stack: $0.key, micros: ($0.value + 500) / 1_000) }.filter { $0.micros > 0 }
            .sorted { $0.stack < $1.stack }.map { "\($0.stack) \($0.micros)\n" }.joined()
    }

    /// Frame names may not hold the separator (`;` becomes `:`) nor a line break or any other
    /// control character (shown escaped, as in text output: `terminalSafe(_:style:)`).
    static func sanitize(_ name: String) -> String {
        let separator = UInt8(ascii: ";")
        let result = terminalSafe(
            name.utf8.contains(separator) ? String(name.map { $0 == ";" ? ":" : $0 }) : name)
        return result.isEmpty ? "?" : result
    }
}
