@_spi(StallwatchPackage) import StallwatchAnalysis
import StallwatchCore

/// Samples of one stall in a row with the same verdict and the same stack: what a stall's
/// breakdown, representative stack and signature are worked out from. A fleet's stalls are
/// mostly one or two runs, so the work is per run, not per sample.
struct SampleRun {
    /// The run's verdict, in its trace's `AppFrameMemo.verdicts`.
    var verdict: Int
    /// The run's stack, in its trace's `StackMemo`; -1 for samples without frames.
    var stack: Int
    /// The index of the run's first sample in the stall.
    var first: Int
    /// How many samples the run has.
    var count: Int
    /// Their weights (`StallAccounting`) summed.
    var nanos: UInt64

    /// Appends sample `index` of `verdict`, `stack` and `weight` to `runs`: to the last run when
    /// that has the same verdict and stack.
    static func append(_ index: Int, verdict: Int, stack: Int, weight: UInt64, to runs: inout [SampleRun]) {
        if let last = runs.indices.last, runs[last].verdict == verdict, runs[last].stack == stack {
            runs[last].count += 1
            runs[last].nanos += weight
        } else {
            runs.append(SampleRun(verdict: verdict, stack: stack, first: index, count: 1, nanos: weight))
        }
    }
}

/// What a stall's runs come to: its breakdown, dominant category, representative stack and
/// signature.
struct RunAnalysis {
    var breakdown: StallBreakdown
    var category: StallCategory
    var representative: RepresentativeStack?
    /// The representative stack's number in the trace's `StackMemo`, -1 without one.
    var representativeStack: Int
    var key: SignatureKey

    /// Analyzes `runs` (of `sampleCount` samples weighing `total` nanoseconds) with the verdicts
    /// and stacks `memo` numbered; `names` names the trace's frames.
    init(_ runs: [SampleRun], sampleCount: Int, total: UInt64, memo: AppFrameMemo, names: TraceNames) {
        let verdicts = memo.verdicts
        var weigher = StallBreakdown.Weigher()
        for run in runs {
            let verdict = verdicts[run.verdict]
            weigher.add(verdict.category, verdict.reason, units: total == 0 ? UInt64(run.count) : run.nanos)
        }
        breakdown = weigher.breakdown(totalNanos: total, sampleCount: sampleCount)
        let category = breakdown.dominant ?? .other
        self.category = category
        let chosen = RepresentativeStack.choose(
            runs: runs, verdicts: verdicts, total: total, sampleCount: sampleCount, category: category,
            memo: memo.stacks)
        representative = chosen?.stack
        representativeStack = chosen?.number ?? -1

        // The signature: the representative stack's innermost app frames; failing that, the
        // most frequent app-frame prefix among samples of the dominant category.
        var frames = chosen.map { memo.appFrames(ofStack: $0.number, names: names) } ?? []
        if frames.isEmpty {
            var counts: [[String]: (count: Int, first: Int)] = [:]
            for run in runs where run.stack >= 0 && verdicts[run.verdict].category == category {
                let candidate = memo.appFrames(ofStack: run.stack, names: names)
                guard !candidate.isEmpty else { continue }
                counts[candidate] = ((counts[candidate]?.count ?? 0) + run.count, counts[candidate]?.first ?? run.first)
            }
            frames =
                counts.max(by: { ($0.value.count, -$0.value.first) < ($1.value.count, -$1.value.first) })?.key ?? []
        }
        if !frames.isEmpty {
            key = SignatureKey(category: category, frames: frames)
        } else if let reason = breakdown.topReasons.first(where: { $0.category == category }) {
            key = SignatureKey(category: category, frames: ["[\(reason.reason)]"])
        } else {
            key = SignatureKey(category: category, frames: ["[no samples]"])
        }
    }
}

/// What a report adds up of one stall: its times, tier, site, breakdown and signature, and
/// what the signature shows when it is the longest stall of its signature (the representative
/// stack, where the stall is).
///
/// A plain value; use it on any thread.
struct StallFigures: Sendable {
    var tracePath: String
    var id: UInt64
    var start: UInt64
    var unfinished: Bool
    var tier: Tier
    var file: String
    var line: UInt32
    var durationNanos: UInt64
    var overrunNanos: UInt64
    var unsampledNanos: UInt64
    var breakdown: StallBreakdown
    var category: StallCategory
    var key: SignatureKey
    var representativeFrames: [Frame]
    /// The representative stack's confidence, 0 without one.
    var confidence: Double
    var names: TraceNames
    var sampleCount: Int
    /// `WaitFact.summary` of each sample that has a wait fact.
    var waits: [String]
    /// The stall's `expectLong` reason, and the app's state at its detection.
    var expected: String?
    var context: [String: String]
    /// The executor it blocked, for one that is not `MainLoop` (`ExecutorName`).
    var executor: String?

    /// The figures of every stall of `loaded`, each read once off the trace's sample table
    /// (`AppFrameMemo.read`), classified by `classifier` with `memo` (this trace's): what
    /// `StallFigures(_:)` gives of the same stalls analyzed, without building their samples.
    static func of(_ loaded: LoadedTrace, classifier: Classifier, memo: AppFrameMemo) -> [StallFigures] {
        let trace = loaded.trace
        let budget = (trace.header?.thresholds.budget ?? TierThresholds.default.budget).nanoseconds
        let names = TraceNames(modules: trace.modules)
        var state = TableReading(trace.table)
        // Each made where it lies in the array (appending copied every stall's figures).
        return trace.bareStalls.indices.map { slot in
            // Taken out of the array once (each time copies it, every string and array of it).
            let stall = trace.bareStalls[slot]
            let reading = memo.read(
                stall, slot: slot, of: trace.table, classifier: classifier, names: names, perRow: false,
                state: &state)
            return StallFigures(
                stall, tracePath: loaded.path, durationNanos: reading.durationNanos,
                budgetNanos: budget, weighedNanos: reading.total, breakdown: reading.analysis.breakdown,
                category: reading.analysis.category, key: reading.analysis.key,
                representativeFrames: reading.analysis.representativeStack < 0
                    ? [] : memo.stacks.frames(ofStack: reading.analysis.representativeStack),
                confidence: reading.analysis.representative?.confidence ?? 0, names: names,
                sampleCount: trace.table.ranges[slot].count, waits: reading.waits)
        }
    }
}

extension StallFigures {
    /// What `analyzed` adds up.
    init(_ analyzed: AnalyzedStall) {
        self.init(
            analyzed.stall, tracePath: analyzed.tracePath, durationNanos: analyzed.durationNanos,
            budgetNanos: analyzed.budgetNanos, weighedNanos: analyzed.sampleWeights.reduce(0, +),
            breakdown: analyzed.breakdown, category: analyzed.category, key: analyzed.key,
            representativeFrames: analyzed.representativeFrames,
            confidence: analyzed.representative?.confidence ?? 0, names: TraceNames(analyzed.names),
            sampleCount: analyzed.stall.samples.count,
            waits: analyzed.stall.samples.compactMap { $0.wait?.summary })
    }

    init(
        _ stall: Stall, tracePath: String, durationNanos: UInt64, budgetNanos: UInt64, weighedNanos: UInt64,
        breakdown: StallBreakdown, category: StallCategory, key: SignatureKey, representativeFrames: [Frame],
        confidence: Double, names: TraceNames, sampleCount: Int, waits: [String]
    ) {
        let site = StallSite(stall.callout, frames: representativeFrames)
        // One memberwise call builds the figures in place. Assigned field by field here, they are
        // built in a temporary and copied out: a retain and a release of every string and array,
        // per stall.
        self.init(
            tracePath: tracePath, id: stall.id, start: stall.start, unfinished: stall.flags.contains(.unfinished),
            tier: stall.tier, file: site.file, line: site.line, durationNanos: durationNanos,
            overrunNanos: durationNanos > budgetNanos ? durationNanos - budgetNanos : 0,
            unsampledNanos: durationNanos > weighedNanos ? durationNanos - weighedNanos : 0, breakdown: breakdown,
            category: category, key: key, representativeFrames: representativeFrames, confidence: confidence,
            names: names, sampleCount: sampleCount, waits: waits, expected: stall.expected, context: stall.context,
            executor: ExecutorName.of(stall.callout))
    }
}

/// What reading the stalls of one sample table keeps from stall to stall: each distinct row
/// key's verdict, each stack's number in the memo, room for a stall's runs. A value the caller
/// holds (a class's properties would be checked for exclusive access on every lookup).
struct TableReading {
    /// Each distinct row key's verdict number (in `AppFrameMemo.verdicts`), by the key's number.
    var keys = KeyNumbers<RowKey>()
    var verdicts: [Int] = []
    /// The distinct kernel facts of rows (`RowKey.facts`), numbered.
    var facts = KeyNumbers<RowFacts>()
    /// Per stack of the table: its number in the memo's `StackMemo` (-1: no frames; -2: not
    /// seen yet).
    var stacks: [Int]
    var runs: [SampleRun] = []
    /// The last row read, its key, verdict and stack: rows in a row mostly repeat it.
    var last: (key: RowKey, verdict: Int, stack: Int)?

    init(_ table: SampleTable) {
        stacks = [Int](repeating: -2, count: table.stacks.count)
    }

    /// The number of `table`'s stack `stack` in `memo.stacks`, numbered the first time.
    mutating func stack(_ stack: Int32, of table: SampleTable, memo: AppFrameMemo) -> Int {
        let index = Int(stack)
        if stacks[index] == -2 {
            stacks[index] = table.stacks[index].isEmpty ? -1 : memo.stacks.adding(table.stacks[index])
        }
        return stacks[index]
    }

    /// The verdict number of row `index` of `table` (of stall id `stall`), whose key is `key`
    /// and stack `stack`: `classifier`'s, once per distinct key.
    mutating func verdict(
        _ key: RowKey, row index: Int, stall: UInt64, of table: SampleTable, stack: Int, memo: AppFrameMemo,
        _ classifier: Classifier
    ) -> Int {
        let number = keys.number(of: key)
        if number < verdicts.count { return verdicts[number] }
        verdicts.append(memo.addVerdict(row: index, stall: stall, of: table, stack: stack, classifier))
        return verdicts[number]
    }
}

/// What reading one stall's rows of its sample table once gives (`AppFrameMemo.read`): its
/// duration and weighed time (`StallAccounting`), its samples' wait summaries, what its runs
/// come to and, when asked for, each row's verdict number and weight.
struct StallReading {
    var durationNanos: UInt64
    /// The rows' weights summed.
    var total: UInt64 = 0
    /// `WaitFact.summary` of each row that has a wait fact.
    var waits: [String] = []
    var analysis: RunAnalysis
    /// Per row, with `perRow`: its verdict (in `AppFrameMemo.verdicts`) and weight.
    var verdicts: [Int] = []
    var weights: [UInt64] = []
}

extension AppFrameMemo {
    /// Reads `stall`, whose samples are rows `table.ranges[slot]` (this memo's table): weighs
    /// each row (`StallAccounting.Walk`), finds its verdict (once per distinct `RowKey`;
    /// rows in a row mostly repeat the one before, found without hashing) and its stack, groups
    /// the rows into runs and analyzes those (`RunAnalysis`, frames named by `names`). The one
    /// loop over a stall's samples that every analysis runs; `perRow` also keeps each row's
    /// verdict and weight. `state` is what the table's stalls read so far left (one per table).
    func read(
        _ stall: Stall, slot: Int, of table: SampleTable, classifier: Classifier, names: TraceNames, perRow: Bool,
        state: inout TableReading
    ) -> StallReading {
        let range = table.ranges[slot]
        state.runs.removeAll(keepingCapacity: true)
        var total: UInt64 = 0
        var waits: [String] = []
        var verdicts: [Int] = []
        var weights: [UInt64] = []
        if perRow {
            verdicts.reserveCapacity(range.count)
            weights.reserveCapacity(range.count)
        }
        var walk = StallAccounting.Walk(start: stall.start, end: stall.end, stopped: stall.stopped)
        let first = range.lowerBound
        for index in range {
            let row = table.rows[index]
            let weight = walk.weight(
                of: index - first, count: range.count, time: { table.rows[first + $0].time },
                look: { table.rows[first + $0].look })
            total += weight
            var key = RowKey(row)
            if table.anyKernelFacts && table.hasKernelFacts(index, stall: stall.id) {
                let facts = RowFacts(
                    wait: table.wait(index, stall: stall.id), countersDelta: table.countersDelta(index, stall: stall.id)
                )
                key.facts = Int32(truncatingIfNeeded: state.facts.number(of: facts))
                if let wait = facts.wait { waits.append(wait.summary) }
            }
            // Equal keys have equal stacks and verdicts.
            let verdict: Int
            let stack: Int
            if let last = state.last, last.key == key {
                (verdict, stack) = (last.verdict, last.stack)
            } else {
                stack = state.stack(row.stack, of: table, memo: self)
                verdict = state.verdict(
                    key, row: index, stall: stall.id, of: table, stack: stack, memo: self, classifier)
                state.last = (key, verdict, stack)
            }
            SampleRun.append(index - range.lowerBound, verdict: verdict, stack: stack, weight: weight, to: &state.runs)
            if perRow {
                verdicts.append(verdict)
                weights.append(weight)
            }
        }
        let analysis = RunAnalysis(state.runs, sampleCount: range.count, total: total, memo: self, names: names)
        return StallReading(
            durationNanos: StallAccounting.duration(
                start: stall.start, end: stall.end, lastSample: table.lastTime(of: slot), stopped: stall.stopped),
            total: total, waits: waits, analysis: analysis, verdicts: verdicts, weights: weights)
    }
}

/// A row's `ClassifierInput` within its sample table: its stack, state, syscall, wait channel
/// and annotation, the strings by their numbers in the table, and its kernel facts by their
/// number in `TableReading.facts` (-1 for a row without). Plain numbers, so comparing the key
/// with the previous row's costs no more than its bytes. `ClassifierInputTests` fails when the
/// input gains a field, so that it is added here too.
struct RowKey: Hashable {
    var stack: Int32
    var wchan: Int32
    var annotation: UInt64
    var syscall: Int32?
    var state: ThreadState
    var facts: Int32 = -1

    init(_ row: PendingSample) {
        stack = row.stack
        wchan = row.wchan
        annotation = row.annotation
        syscall = row.syscall
        state = row.state
    }
}

/// What the classifier reads of a row's kernel facts (`RowKey.facts` numbers them).
struct RowFacts: Hashable {
    var wait: WaitFact?
    var countersDelta: KernelCounters?
}
