@_spi(StallwatchPackage) import StallwatchCore

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
/// signature. The one place they are worked out, whether the samples were built (`AnalyzedStall`)
/// or read as the decoder's columns (`StallFigures.ofColumns`).
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
        var weigher = StallBreakdown.Weigher()
        for run in runs {
            let verdict = memo.verdicts[run.verdict]
            weigher.add(verdict.category, verdict.reason, units: total == 0 ? UInt64(run.count) : run.nanos)
        }
        breakdown = weigher.breakdown(totalNanos: total, sampleCount: sampleCount)
        let category = breakdown.dominant ?? .other
        self.category = category
        let chosen = RepresentativeStack.choose(
            runs: runs, verdicts: memo.verdicts, total: total, sampleCount: sampleCount, category: category,
            memo: memo.stacks)
        representative = chosen?.stack
        representativeStack = chosen?.number ?? -1

        // The signature: the representative stack's innermost app frames; failing that, the
        // most frequent app-frame prefix among samples of the dominant category.
        var frames = chosen.map { memo.appFrames(ofStack: $0.number, names: names) } ?? []
        if frames.isEmpty {
            var counts: [[String]: (count: Int, first: Int)] = [:]
            for run in runs where run.stack >= 0 && memo.verdicts[run.verdict].category == category {
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
        self.tracePath = tracePath
        id = stall.id
        start = stall.start
        unfinished = stall.end == nil
        tier = stall.tier
        let site = StallSite(stall.callout, frames: representativeFrames)
        file = site.file
        line = site.line
        self.durationNanos = durationNanos
        overrunNanos = durationNanos > budgetNanos ? durationNanos - budgetNanos : 0
        unsampledNanos = durationNanos > weighedNanos ? durationNanos - weighedNanos : 0
        self.breakdown = breakdown
        self.category = category
        self.key = key
        self.representativeFrames = representativeFrames
        self.confidence = confidence
        self.names = names
        self.sampleCount = sampleCount
        self.waits = waits
    }

    /// The figures of every stall of `loaded`, a trace decoded as columns (`DecodedTrace.columns`),
    /// classified by `classifier` with `memo` (this trace's): what `AnalyzedStall` works out of
    /// the same stalls with their samples built, read off the columns.
    static func ofColumns(_ loaded: LoadedTrace, classifier: Classifier, memo: AppFrameMemo) -> [StallFigures] {
        let trace = loaded.trace
        guard let columns = trace.columns else { return [] }
        let budget = (trace.header?.thresholds.budget ?? TierThresholds.default.budget).nanoseconds
        let names = TraceNames(modules: trace.modules)
        // The trace's stacks in the memo, numbered the first time a sample has one.
        var stacks = columns.stacks.map { _ in -2 }
        func stack(_ number: Int32) -> Int {
            let index = Int(number)
            if stacks[index] == -2 {
                stacks[index] = columns.stacks[index].isEmpty ? -1 : memo.stacks.adding(columns.stacks[index])
            }
            return stacks[index]
        }
        // Each distinct column key's verdict number, by the key's number.
        var keys = KeyNumbers<ColumnKey>()
        var verdicts: [Int] = []
        var result: [StallFigures] = []
        result.reserveCapacity(trace.stalls.count)
        var runs: [SampleRun] = []
        for slot in trace.stalls.indices {
            let (id, start, end) = (trace.stalls[slot].id, trace.stalls[slot].start, trace.stalls[slot].end)
            let range = columns.ranges[slot]
            runs.removeAll(keepingCapacity: true)
            var total: UInt64 = 0
            var previous: (key: ColumnKey, verdict: Int)?
            var waits: [String] = []
            for index in range {
                let sample = columns.samples[index]
                let weight = StallAccounting.weight(
                    at: sample.time, next: index + 1 < range.upperBound ? columns.samples[index + 1].time : nil,
                    isFirst: index == range.lowerBound, start: start, end: end)
                total += weight
                let verdict: Int
                if columns.anyKernelFacts && columns.hasKernelFacts(index, stall: id) {
                    previous = nil
                    verdict = memo.verdict(columns.sample(index, stall: id), stack: stack(sample.stack), classifier)
                    if let wait = columns.wait(index, stall: id) { waits.append(wait.summary) }
                } else {
                    let key = ColumnKey(sample)
                    if let previous, previous.key == key {
                        verdict = previous.verdict
                    } else {
                        let number = keys.number(of: key)
                        if number < verdicts.count {
                            verdict = verdicts[number]
                        } else {
                            verdict = memo.adding(
                                memo.portable.verdict(
                                    columns.sample(index, stall: id), stack: memo.portableStack(stack(sample.stack)),
                                    classifier))
                            verdicts.append(verdict)
                        }
                    }
                    previous = (key, verdict)
                }
                SampleRun.append(
                    index - range.lowerBound, verdict: verdict, stack: stack(sample.stack), weight: weight, to: &runs)
            }
            let analysis = RunAnalysis(runs, sampleCount: range.count, total: total, memo: memo, names: names)
            let duration = StallAccounting.duration(
                start: start, end: end, lastSample: trace.lastSampleTime(ofStall: slot))
            result.append(
                StallFigures(
                    trace.stalls[slot], tracePath: loaded.path, durationNanos: duration,
                    budgetNanos: budget, weighedNanos: total, breakdown: analysis.breakdown,
                    category: analysis.category, key: analysis.key,
                    representativeFrames: analysis.representativeStack < 0
                        ? [] : memo.stacks.frames(ofStack: analysis.representativeStack),
                    confidence: analysis.representative?.confidence ?? 0, names: names, sampleCount: range.count,
                    waits: waits))
        }
        return result
    }
}

/// A column sample's `ClassifierInput` within its trace when it has no kernel facts (so no
/// wait fact or counters): its stack, state, syscall, wait channel and annotation, the strings
/// by their numbers in the trace. `ClassifierInputTests` fails when the input gains a field,
/// so that it is added here too.
private struct ColumnKey: Hashable {
    var stack: Int32
    var wchan: Int32
    var annotation: UInt64
    var syscall: Int32?
    var state: ThreadState

    init(_ sample: PendingSample) {
        stack = sample.stack
        wchan = sample.wchan
        annotation = sample.annotation
        syscall = sample.syscall
        state = sample.state
    }
}
