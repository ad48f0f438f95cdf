import Dispatch
import StallwatchAnalysis
import StallwatchCore

/// Turns loaded traces into a `StallReport`: classifies every sample of every stall (traces
/// in parallel), groups the stalls into signatures and adds up the traces' summaries.
///
/// ```swift
/// let traces = try paths.map { try TraceLoader.load(path: $0).get() }
/// let report = ReportBuilder().report(traces, top: 5)
/// print(ReportText.render(report, colour: false), terminator: "")
/// ```
///
/// A plain value; call it from any thread. Its methods block until done.
package struct ReportBuilder: Sendable {
    /// The rules every sample is classified with: the built-in ones unless the builder was
    /// made with a classifier that adds the app's own (`Classifier(rules:)`, `RulesFile`).
    package var classifier: Classifier
    /// How many threads classify traces at once (every core by default); the result does not
    /// depend on it.
    package var workers: Int
    /// The signatures (`SignatureKey.text`) whose stalls the report leaves out, as if they were
    /// fixed (`gate --what-if`); the report's `leftOut` says how many stalls each had.
    package var leavingOut: Set<String> = []
    /// Whether stalls of work the app expected to be long (`Stall.expected`) count with the
    /// others (`--include-expected`); else they are counted apart, in `StallReport.expected`.
    package var includeExpected = false
    /// The `AppState` key whose values the report groups stalls by (`report --by KEY`).
    package var groupBy: String?

    /// Creates a builder that classifies with `classifier` (the built-in rules by default) on
    /// `workers` threads.
    package init(classifier: Classifier = Classifier(), workers: Int = TraceLoader.availableCores) {
        self.classifier = classifier
        self.workers = workers
    }

    /// Classifies every stall of every trace: one array per trace, in the order given, each
    /// in start order. What the exporters take.
    package func analyze(_ traces: [LoadedTrace]) -> [[AnalyzedStall]] {
        let results = Locked([[AnalyzedStall]](repeating: [], count: traces.count))
        let workers = Workers(self, count: TraceLoader.workerCount(traces.count, workers))
        TraceLoader.forEachIndex(traces.count, workers: self.workers) { worker, index in
            let analyzed = workers.analyze(traces[index], on: worker)
            results.withLock { $0[index] = analyzed }
        }
        return results.withLock { $0 }
    }

    /// Reads every file of `paths` as `TraceLoader.load(paths:includeCallouts:workers:progress:)`
    /// does, analyzes each trace as soon as it is read and adds it up, on the thread that read
    /// it (while its records are still in that core's cache): what `report` runs over a fleet.
    /// `report(_:top:unreadable:)` then makes the report.
    ///
    /// Unless `keepStalls`, each trace's stalls are let go once added up: the results' traces
    /// have no stalls (`trace.stalls` is empty) and `analyzed` is empty, so a fleet takes the
    /// memory of its summaries, not of its samples. With `keepStalls`, `analyzed[i]` is what
    /// `analyze(_:)` gives for input `i` (empty for an input that could not be read).
    package func loadAndTally(
        paths: [String], includeCallouts: Bool = false, keepStalls: Bool = false,
        progress: (@Sendable (_ bytesRead: Int) -> Void)? = nil
    ) -> TalliedTraces {
        let workers = workers
        return tally(paths.count, keepStalls: keepStalls) { index in
            let result = TraceLoader.load(path: paths[index], includeCallouts: includeCallouts, workers: workers)
            if case .success(let trace) = result { progress?(trace.byteCount) }
            return result
        }
    }

    /// `loadAndTally` of `count` inputs, input `i` read by `load(i)` (called from the
    /// analyzing threads, each input once). Unless `keepStalls`, each trace's stalls are added
    /// up off its sample table (`StallFigures.of`), no sample built; the report is the same.
    package func tally(
        _ count: Int, keepStalls: Bool, load: @Sendable (_ index: Int) -> Result<LoadedTrace, TraceLoadError>
    ) -> TalliedTraces {
        let analyzers = Workers(self, count: TraceLoader.workerCount(Self.runCount(count), workers))
        var parts = Self.runs(count, workers: workers) { worker, inputs in
            var part = Part()
            part.tally = newTally()
            for index in inputs {
                switch load(index) {
                case .failure(let error):
                    part.results.append(.failure(error))
                    if keepStalls { part.analyzed.append([]) }
                case .success(var trace):
                    if keepStalls {
                        let stalls = analyzers.analyze(trace, on: worker)
                        part.tally.add(trace, number: index, stalls: stalls.map(StallFigures.init))
                        part.analyzed.append(stalls)
                    } else {
                        part.tally.add(trace, number: index, stalls: analyzers.figures(trace, on: worker))
                        trace.trace.dropStalls()
                    }
                    part.results.append(.success(trace))
                }
            }
            return part
        }
        var result = TalliedTraces()
        result.results.reserveCapacity(count)
        result.analyzed.reserveCapacity(keepStalls ? count : 0)
        for index in parts.indices {
            var part = parts[index].take()!
            // Each result moved out of its run: appending the run's array would copy every
            // trace, on one core, at the end.
            for taken in part.results.indices { result.results.append(part.results[taken].take()!) }
            result.analyzed += part.analyzed
            result.tally.merge(part.tally)
        }
        return result
    }

    /// What one run of `tally` adds up: its inputs' results (as optionals, to be moved out),
    /// analyzed stalls and tally.
    private struct Part: Sendable {
        var results: [Result<LoadedTrace, TraceLoadError>?] = []
        var analyzed: [[AnalyzedStall]] = []
        var tally = FleetTally()
    }

    /// What each analyzing thread keeps for itself: a classifier (copies would share the
    /// frame cache's lock and the compiled rules' reference counts, and on two cores that
    /// sharing cost more than the second core gave, 0.5x; the same rules give the same
    /// verdicts) and what it learned that holds in every trace (`PortableMemo`).
    struct Workers: Sendable {
        var classifiers: [Classifier]
        var portable: [PortableMemo]

        init(_ builder: ReportBuilder, count: Int) {
            let count = max(1, count)
            classifiers = [builder.classifier] + (1..<count).map { _ in Classifier(rules: builder.classifier.rules) }
            portable = (0..<count).map { _ in PortableMemo() }
        }

        /// The stalls of `trace` analyzed by worker `worker`.
        func analyze(_ trace: LoadedTrace, on worker: Int) -> [AnalyzedStall] {
            let classifier = classifiers[worker]
            let budget = trace.trace.header?.thresholds.budget ?? TierThresholds.default.budget
            let names = FrameNamer(modules: trace.trace.modules)
            let memo = AppFrameMemo(portable: portable[worker])
            var state = TableReading(trace.trace.table)
            let stackNames = StackNames(trace.trace.table, namer: names)
            return trace.trace.bareStalls.indices.map {
                AnalyzedStall(
                    slot: $0, of: trace.trace.table, stall: trace.trace.bareStalls[$0], tracePath: trace.path,
                    budget: budget, classifier: classifier, names: names, memo: memo, state: &state,
                    stackNames: stackNames)
            }
        }

        /// The figures of the stalls of `trace` worked out by worker `worker`, no sample built.
        func figures(_ trace: LoadedTrace, on worker: Int) -> [StallFigures] {
            StallFigures.of(
                trace, classifier: classifiers[worker], memo: AppFrameMemo(portable: portable[worker]))
        }
    }

    /// The report of `traces` added up, listing the `top` largest signatures (all of them are
    /// counted in `signatureCount`).
    /// `unreadable` lists the inputs that could not be read, for the fleet summary.
    package func report(
        _ traces: [LoadedTrace], top: Int = 10, unreadable: [StallReport.Unreadable] = []
    ) -> StallReport {
        let analyzed = analyze(traces)
        return report(traces, analyzed: analyzed, top: top, unreadable: unreadable)
    }

    /// The report of `traces` whose stalls `analyze(_:)` already classified (`analyzed[i]`
    /// belongs to `traces[i]`), so a caller that also exports them classifies once.
    package func report(
        _ traces: [LoadedTrace], analyzed: [[AnalyzedStall]], top: Int, unreadable: [StallReport.Unreadable] = []
    ) -> StallReport {
        var tally = newTally()
        var parts = Self.runs(traces.count, workers: workers) { _, indices in
            var part = newTally()
            for index in indices {
                part.add(traces[index], number: index, stalls: analyzed[index].map(StallFigures.init))
            }
            return part
        }
        for index in parts.indices { tally.merge(parts[index].take()!) }
        return report(tally, numbers: traces.count, top: top, unreadable: unreadable)
    }

    /// The report of the traces `loadAndTally` read (the inputs that could not be read are in
    /// `unreadable`, for the fleet summary). Reports the same as `report(_:analyzed:top:
    /// unreadable:)` of the traces read and their analyzed stalls.
    package func report(_ tallied: TalliedTraces, top: Int = 10, unreadable: [StallReport.Unreadable] = [])
        -> StallReport
    {
        report(tallied.tally, numbers: tallied.results.count, top: top, unreadable: unreadable)
    }

    /// The report of what `tally` added up, its traces numbered among `numbers` inputs.
    func report(_ tally: FleetTally, numbers: Int, top: Int, unreadable: [StallReport.Unreadable]) -> StallReport {
        var infos: [StallReport.TraceInfo] = []
        infos.reserveCapacity(tally.traceCount)
        var origins = TraceOrigins(count: numbers)
        for run in tally.runs.indices {
            for index in tally.runs[run].indices {
                origins.set(
                    tally.runs[run][index].number, build: tally.runs[run][index].info.build,
                    host: tally.runs[run][index].facts.host)
                infos.append(tally.runs[run][index].info)
            }
        }
        let fleet = tally.fleet
        let runNanos = fleet.runNanos
        let totals = tally.stalls
        let byTier = Dictionary(uniqueKeysWithValues: zip(Tier.allCases, totals.tiers))
        let byCategory = Dictionary(uniqueKeysWithValues: zip(StallCategory.allCases, totals.categories))
        let stallStats = StallReport.StallStats(
            total: totals.count, unfinished: totals.unfinished, totalMs: ms(totals.total),
            byTier: byTier, byCategory: byCategory,
            categoryMs: Dictionary(
                uniqueKeysWithValues: StallCategory.allCases.map { ($0, ms(totals.categoryNanos[$0.ordinal])) }),
            unsampledMs: ms(totals.unsampled), hangs: totals.hangs, hangMs: ms(totals.hangNanos))
        let rates = RunRates(runNanos: runNanos, hangNanos: totals.hangNanos, overrunNanos: totals.overrun)

        var signatures = tally.signatures.signatures(origins: origins, traceCount: tally.traceCount, workers: workers)
        for index in signatures.indices.prefix(max(0, top)) {
            let saving = tally.signatures.saving(of: signatures[index].key)
            signatures[index].ifFixed = saving?.ifFixed(rates: rates, frames: tally.frames)
        }
        var report = StallReport(
            traces: infos, fleet: fleet.summary(unreadable: unreadable),
            runTimeSeconds: round(Double(runNanos) / 1e9, 6),
            loopUtilisation: fleet.sawFull && fleet.fullRunNanos > 0
                ? round(Double(fleet.calloutNanos) / Double(fleet.fullRunNanos), 4) : nil,
            frames: tally.frames.stats,
            hitchRatioMsPerSecond: rates.hitchRatioMsPerSecond,
            hitchGrade: HitchGrade(msPerSecond: rates.hitchRatioMsPerSecond),
            hangRateSecondsPerHour: rates.hangRateSecondsPerHour,
            rateByBuild: StallReport.groupRates(tally.runs.joined().map { ($0.info.build, $0.rates) }),
            rateByHost: StallReport.groupRates(tally.runs.joined().map { ($0.facts.host ?? "unknown", $0.rates) }),
            stalls: stallStats, loopLatency: Self.latency(tally.latency), congestion: tally.congestion.stats(),
            signatureCount: signatures.count,
            signatures: Array(signatures.prefix(max(0, top))), leftOut: tally.leftOut,
            expected: tally.expected.stats, groups: tally.groups(by: groupBy))
        let stopped = tally.runs.joined().reduce(into: (nanos: UInt64(0), stalls: 0)) {
            $0.nanos += $1.stopped.nanos
            $0.stalls += $1.stopped.stalls
        }
        report.stopped = StallReport.StoppedTime(seconds: round(Double(stopped.nanos) / 1e9, 6), stalls: stopped.stalls)
        report.processTrees = StallReport.ProcessTree.trees(of: infos)
        return report
    }

    /// Every signature of `stalls`, largest total time first (then count, then key): what
    /// `SignatureDiff` compares between two runs.
    /// `facts` (by trace path) and `traceCount` feed each signature's fleet numbers (traces
    /// affected, builds, hosts, first and last seen).
    package static func signatures(
        _ stalls: [AnalyzedStall], facts: [String: TraceFacts] = [:], traceCount: Int = 0
    ) -> [StallReport.Signature] {
        // Each trace's stalls together, traces in the order they first appear.
        var index: [String: Int] = [:]
        var traces: [[AnalyzedStall]] = []
        var traceFacts: [TraceFacts?] = []
        for stall in stalls {
            if let known = index[stall.tracePath] {
                traces[known].append(stall)
            } else {
                index[stall.tracePath] = traces.count
                traces.append([stall])
                traceFacts.append(facts[stall.tracePath])
            }
        }
        return signatures(traces, facts: traceFacts, traceCount: traceCount)
    }

    /// As above for `stalls[i]`, the stalls of the trace with `facts[i]`: one pass over the
    /// stalls, copying none of them, on up to `workers` threads, in runs of `run` traces
    /// (`runLength` by default) merged in order.
    static func signatures(
        _ stalls: [[AnalyzedStall]], facts: [TraceFacts?], traceCount: Int, workers: Int = 1, run: Int? = nil
    ) -> [StallReport.Signature] {
        var parts = runs(stalls.count, workers: workers, length: run) { _, traces in
            var part = SignatureTallies()
            for trace in traces { part.add(stalls[trace].map(StallFigures.init), trace: trace, facts: facts[trace]) }
            return part
        }
        var tallies = SignatureTallies()
        for index in parts.indices { tallies.merge(parts[index].take()!) }
        var origins = TraceOrigins(count: facts.count)
        for index in facts.indices { if let known = facts[index] { origins.set(index, known) } }
        return tallies.signatures(origins: origins, traceCount: traceCount, workers: workers)
    }

    /// `frame` ready to print, named by `names`.
    static func stackFrame(_ frame: Frame, names: FrameNamer) -> StallReport.StackFrame {
        StallReport.StackFrame(
            name: names.name(frame), symbol: names.fullName(frame), module: frame.module,
            source: names.source(frame), system: frame.isSystem)
    }

    /// From the header's start (else the first timestamp) to the last timestamp (the recording's
    /// end, where the trace says it), in nanoseconds.
    /// The app's run time: `wallRunTime(of:)` less the time the process was stopped (SIGSTOP,
    /// a debugger), which is not the app's. What rates divide by.
    static func runTime(of loaded: LoadedTrace) -> UInt64 {
        let wall = wallRunTime(of: loaded)
        let stopped = loaded.trace.stoppedNanos
        return wall > stopped ? wall - stopped : 0
    }

    /// From the trace's start to the last time it holds: the extent of its clock.
    static func wallRunTime(of loaded: LoadedTrace) -> UInt64 {
        var first = UInt64.max
        var last: UInt64 = 0
        func see(_ time: UInt64) {
            first = min(first, time)
            last = max(last, time)
        }
        // By index: `for stall in stalls` copied every stall and `samples.last` its last sample,
        // and a fleet report asks this of every trace twice.
        let stalls = loaded.trace.bareStalls
        for index in stalls.indices {
            see(stalls[index].start)
            if let end = stalls[index].end { see(end) }
            if let last = loaded.trace.lastSampleTime(ofStall: index) { see(last) }
        }
        for record in loaded.trace.frameClock { see(record.intervalStart &+ record.intervalLength) }
        for record in loaded.trace.latencyHistograms { see(record.intervalStart &+ record.intervalLength) }
        for record in loaded.trace.congestion { see(record.intervalStart &+ record.intervalLength) }
        if loaded.trace.lastCalloutEnd > 0 { see(loaded.trace.lastCalloutEnd) }
        if let end = loaded.trace.recordedUntil { see(end) }
        let start = loaded.trace.header?.clockBase ?? first
        return last > start ? last - start : 0
    }

    /// The loop-latency percentiles of the samples counted by bucket in `perBucket`; nil
    /// without samples.
    static func latency(_ perBucket: [UInt64]) -> StallReport.LatencyStats? {
        let total = perBucket.reduce(0, +)
        guard total > 0 else { return nil }
        let sorted = perBucket.indices.filter { perBucket[$0] > 0 }.map { (key: $0, value: perBucket[$0]) }
        func percentile(_ fraction: Double) -> Double {
            let rank = max(1, UInt64((fraction * Double(total)).rounded(.up)))
            var seen: UInt64 = 0
            for (index, count) in sorted {
                seen += count
                if seen >= rank { return ms(LatencyBuckets.lowerBoundNanoseconds(ofBucket: index)) }
            }
            return ms(LatencyBuckets.lowerBoundNanoseconds(ofBucket: sorted.last!.key))
        }
        return StallReport.LatencyStats(
            count: total, p50Ms: percentile(0.5), p90Ms: percentile(0.9), p99Ms: percentile(0.99),
            p999Ms: percentile(0.999), maxMs: percentile(1))
    }
}

/// Nanoseconds as milliseconds, to the microsecond.
func ms(_ nanos: UInt64) -> Double {
    round(Double(nanos) / 1e6, 3)
}

func round(_ value: Double, _ places: Int) -> Double {
    var scale = 1.0
    for _ in 0..<places { scale *= 10 }
    return (value * scale).rounded() / scale
}

extension ReportBuilder {
    /// How many traces one thread adds up before its sums are merged with the others': the
    /// sums (some in floating point) depend on it, so it depends on the number of traces
    /// only, never on the workers. Up to 64, and at least 16 runs when there are that many
    /// traces, so every core gets some.
    static func runLength(_ count: Int) -> Int { max(1, min(64, count / 16)) }

    /// How many runs of `runLength(count)` cover `count` traces.
    static func runCount(_ count: Int, length: Int? = nil) -> Int {
        let length = length ?? runLength(count)
        return (count + length - 1) / length
    }

    /// `body(worker, run)` for each run of `0..<count` (`length` long, `runLength(count)` by
    /// default) on up to `workers` threads (`worker` says which, as `TraceLoader.forEachIndex`
    /// does); the values in run order, as optionals to take out one by one without a copy.
    static func runs<Value: Sendable>(
        _ count: Int, workers: Int, length: Int? = nil, _ body: @Sendable (_ worker: Int, Range<Int>) -> Value
    ) -> [Value?] {
        let length = length ?? runLength(count)
        let parts = Locked([Value?](repeating: nil, count: runCount(count, length: length)))
        TraceLoader.forEachIndex(runCount(count, length: length), workers: workers) { worker, run in
            let part = body(worker, run * length..<min(count, (run + 1) * length))
            parts.withLock { $0[run] = part }
        }
        return parts.withLock { storage in storage.indices.map { storage[$0].take() } }
    }
}

/// Traces read and added up as they were read (`ReportBuilder.loadAndTally`): each input's
/// trace or why it could not be read, and what a report of them needs.
///
/// A plain value; use it on any thread.
package struct TalliedTraces: Sendable {
    /// Each input's trace, or why it could not be read, in the order given. Unless the stalls
    /// were kept, each trace's `trace.stalls` is empty: they were analyzed, added up and let go.
    package var results: [Result<LoadedTrace, TraceLoadError>] = []
    /// `analyzed[i]` is input `i`'s stalls analyzed when the stalls were kept; else empty.
    package var analyzed: [[AnalyzedStall]] = []
    /// The traces read, added up.
    var tally = FleetTally()

    /// No traces.
    package init() {}
}
