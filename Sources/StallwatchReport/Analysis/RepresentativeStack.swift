import StallwatchAnalysis
import StallwatchCore

/// The stack that stands for a stall, and how much of the stall it stands for.
///
/// The stall's samples of its dominant category are grouped by their stacks' function names
/// (not addresses: two samples at different lines of the same functions are one group;
/// compiler-generated glue is left out, frames without a symbol count by module); the group
/// with the most time (`StallAccounting` weights, by sample count when no time could be
/// attributed) wins, earliest first sample breaking ties. Its share of the stall's attributed
/// time is the **confidence**: 1 when every sample had the same stack, low when the stall
/// moved between many.
///
/// `AnalyzedStall` computes it once; `report`, `show`, the signature and every export use it.
/// A plain value; use it on any thread.
package struct RepresentativeStack: Sendable, Hashable {
    /// The index of the group's first sample in `stall.samples`: the stack shown.
    package var sample: Int
    /// How many samples had this stack.
    package var samples: Int
    /// The group's share (0…1) of the stall's attributed time (of its samples when no time
    /// could be attributed).
    package var confidence: Double

    /// The representative stack of a stall's samples, in `runs` (in time order; `verdicts`
    /// holds the runs' verdicts, `total` is the samples' summed weight, `sampleCount` how many
    /// there are), or `nil` when no sample of `category` has a stack; with the number of the
    /// stack shown. Stacks are grouped as `memo` knows them (one memo per trace: within a trace
    /// the same stack is always the same group).
    static func choose(
        runs: [SampleRun], verdicts: [Classification], total: UInt64, sampleCount: Int, category: StallCategory,
        memo: StackMemo
    ) -> (stack: RepresentativeStack, number: Int)? {
        let unitTotal = total == 0 ? UInt64(sampleCount) : total
        func confidence(_ units: UInt64) -> Double { unitTotal == 0 ? 0 : round(Double(units) / Double(unitTotal), 4) }
        // A stall of one run (most stalls are) is its own group: no table of groups to fill.
        if runs.count == 1 {
            let run = runs[0]
            guard run.stack >= 0 && verdicts[run.verdict].category == category else { return nil }
            let units = total == 0 ? UInt64(run.count) : run.nanos
            return (
                RepresentativeStack(sample: run.first, samples: run.count, confidence: confidence(units)), run.stack
            )
        }
        var groups: [(group: Int, units: UInt64, count: Int, first: Int, stack: Int)] = []
        memo.withSlots { slots in
            for run in runs where run.stack >= 0 && verdicts[run.verdict].category == category {
                let group = memo.group(ofStack: run.stack)
                if group >= slots.count { slots += repeatElement(-1, count: group - slots.count + 1) }
                if slots[group] < 0 {
                    slots[group] = groups.count
                    groups.append((group, 0, 0, run.first, run.stack))
                }
                let slot = slots[group]
                groups[slot].units += total == 0 ? UInt64(run.count) : run.nanos
                groups[slot].count += run.count
            }
            for group in groups { slots[group.group] = -1 }
        }
        guard
            let best = groups.max(by: {
                ($0.units, $0.count, -$0.first) < ($1.units, $1.count, -$1.first)
            })
        else { return nil }
        return (
            RepresentativeStack(sample: best.first, samples: best.count, confidence: confidence(best.units)), best.stack
        )
    }

    /// What samples are grouped by: function names, innermost first, without glue; a frame
    /// without a symbol by its module alone (its address differs from sample to sample).
    static func groupKey(_ frames: [Frame]) -> [String] {
        var key: [String] = []
        for frame in frames where !isCompilerGenerated(frame) {
            let name = frame.symbol.map(function) ?? frame.module.map { "[\(Frame.basename($0))]" } ?? "[?]"
            // Recursion, re-entered generic wrappers (`withUnsafeBytes` twice) and a forwarder
            // with the function it stands for are one step.
            if key.last != name { key.append(name) }
        }
        return key
    }

    /// The function `symbol` stands for (`Frame.standsFor`), the symbol itself when it has no
    /// wrapper.
    private static func function(_ symbol: String) -> String {
        let function = Frame.standsFor(symbol)
        return function.startIndex == symbol.startIndex ? symbol : String(function)
    }
}
