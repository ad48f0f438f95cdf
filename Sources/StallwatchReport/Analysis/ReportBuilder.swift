import Dispatch
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
public struct ReportBuilder: Sendable {
    /// The rules every sample is classified with: the built-in ones unless the builder was
    /// made with a classifier that adds the app's own (`Classifier(rules:)`, `RulesFile`).
    public var classifier: Classifier
    /// How many threads classify traces at once (every core by default); the result does not
    /// depend on it.
    public var workers: Int

    /// Creates a builder that classifies with `classifier` (the built-in rules by default) on
    /// `workers` threads.
    public init(classifier: Classifier = Classifier(), workers: Int = TraceLoader.availableCores) {
        self.classifier = classifier
        self.workers = workers
    }

    /// Classifies every stall of every trace: one array per trace, in the order given, each
    /// in start order. What the exporters take.
    public func analyze(_ traces: [LoadedTrace]) -> [[AnalyzedStall]] {
        let results = Locked([[AnalyzedStall]](repeating: [], count: traces.count))
        let workers = Workers(self, count: TraceLoader.workerCount(traces.count, workers))
        TraceLoader.forEachIndex(traces.count, workers: self.workers) { worker, index in
            let analyzed = workers.analyze(traces[index], on: worker)
            results.withLock { $0[index] = analyzed }
        }
        return results.withLock { $0 }
    }

    /// Reads every file of `paths` as `TraceLoader.load(paths:includeCallouts:workers:progress:)`
    /// does and analyzes each trace as soon as it is read, on the thread that read it (while
    /// its records are still in that core's cache): what `report` runs over a fleet.
    /// `result[i].stalls` is what `analyze(_:)` gives for trace `i`.
    public func loadAndAnalyze(
        paths: [String], includeCallouts: Bool = false, progress: (@Sendable (_ bytesRead: Int) -> Void)? = nil
    ) -> [Result<(trace: LoadedTrace, stalls: [AnalyzedStall]), TraceLoadError>] {
        let workers = Workers(self, count: TraceLoader.workerCount(paths.count, self.workers))
        return TraceLoader.load(
            paths: paths, includeCallouts: includeCallouts, workers: self.workers, progress: progress
        ) { worker, trace in
            (trace, workers.analyze(trace, on: worker))
        }
    }

    /// What each analyzing thread keeps for itself: a classifier (copies would share the
    /// frame cache's lock and the compiled rules' reference counts, and on two cores that
    /// sharing cost more than the second core gave, 0.5x; the same rules give the same
    /// verdicts) and the names of the symbols it has seen.
    struct Workers: Sendable {
        var classifiers: [Classifier]
        var symbols: [SymbolNameMemo]

        init(_ builder: ReportBuilder, count: Int) {
            let count = max(1, count)
            classifiers = [builder.classifier] + (1..<count).map { _ in Classifier(rules: builder.classifier.rules) }
            symbols = (0..<count).map { _ in SymbolNameMemo() }
        }

        /// The stalls of `trace` analyzed by worker `worker`.
        func analyze(_ trace: LoadedTrace, on worker: Int) -> [AnalyzedStall] {
            let classifier = classifiers[worker]
            let budget = trace.trace.header?.thresholds.budget ?? TierThresholds.default.budget
            let names = FrameNamer(modules: trace.trace.modules)
            let memo = AppFrameMemo(symbols: symbols[worker])
            return trace.trace.stalls.map {
                AnalyzedStall(
                    $0, tracePath: trace.path, budget: budget, classifier: classifier, names: names, memo: memo)
            }
        }
    }

    /// The report of `traces` added up, listing the `top` largest signatures (all of them are
    /// counted in `signatureCount`).
    /// `unreadable` lists the inputs that could not be read, for the fleet summary.
    public func report(
        _ traces: [LoadedTrace], top: Int = 10, unreadable: [StallReport.Unreadable] = []
    ) -> StallReport {
        let analyzed = analyze(traces)
        return report(traces, analyzed: analyzed, top: top, unreadable: unreadable)
    }

    /// The report of `traces` whose stalls `analyze(_:)` already classified (`analyzed[i]`
    /// belongs to `traces[i]`), so a caller that also exports them classifies once.
    public func report(
        _ traces: [LoadedTrace], analyzed: [[AnalyzedStall]], top: Int, unreadable: [StallReport.Unreadable] = []
    ) -> StallReport {
        // Each trace's facts, run time, line and stall totals are made on every core, runs of
        // traces apart (the totals are integers, so their sum does not depend on the split);
        // in one serial pass over every stall, that walk through memory was most of what did
        // not shrink with more cores.
        let parts = Self.map(traces.count, workers: workers) { index in
            TraceTotals(traces[index], stalls: analyzed[index])
        }
        var facts: [TraceFacts] = []
        var runTimes: [UInt64] = []
        var infos: [StallReport.TraceInfo] = []
        facts.reserveCapacity(traces.count)
        runTimes.reserveCapacity(traces.count)
        infos.reserveCapacity(traces.count)
        var runNanos: UInt64 = 0
        var fullRunNanos: UInt64 = 0
        var calloutNanos: UInt64 = 0
        var sawFull = false
        var totals = StallTotals()
        for part in parts {
            for index in part.indices {
                let run = part[index].run
                runNanos += run
                if part[index].full {
                    sawFull = true
                    fullRunNanos += run
                    calloutNanos += part[index].calloutNanos
                }
                facts.append(part[index].facts)
                runTimes.append(run)
                infos.append(part[index].info)
                totals.add(part[index].stalls)
            }
        }
        let byTier = Dictionary(uniqueKeysWithValues: zip(Tier.allCases, totals.tiers))
        let byCategory = Dictionary(uniqueKeysWithValues: zip(StallCategory.allCases, totals.categories))
        let stallStats = StallReport.StallStats(
            total: analyzed.reduce(0) { $0 + $1.count }, unfinished: totals.unfinished, totalMs: ms(totals.total),
            byTier: byTier, byCategory: byCategory,
            categoryMs: Dictionary(
                uniqueKeysWithValues: StallCategory.allCases.map { ($0, ms(totals.categoryNanos[$0.ordinal])) }),
            unsampledMs: ms(totals.unsampled), hangs: totals.hangs)

        let signatures = Self.signatures(
            analyzed, origins: TraceOrigins(facts.map(Optional.some)), traceCount: traces.count, workers: workers)
        return StallReport(
            traces: infos, fleet: Self.fleetSummary(traces, facts: facts, runTimes: runTimes, unreadable: unreadable),
            runTimeSeconds: round(Double(runNanos) / 1e9, 6),
            loopUtilisation: sawFull && fullRunNanos > 0 ? round(Double(calloutNanos) / Double(fullRunNanos), 4) : nil,
            frames: Self.frameStats(traces),
            hitchRatioMsPerSecond: runNanos == 0
                ? 0 : round(Double(totals.overrun) / 1e6 / (Double(runNanos) / 1e9), 3),
            stalls: stallStats, loopLatency: Self.latency(traces), congestion: CongestionAnalysis.stats(traces),
            signatureCount: signatures.count,
            signatures: Array(signatures.prefix(max(0, top))))
    }

    /// Every signature of `stalls`, largest total time first (then count, then key): what
    /// `SignatureDiff` compares between two runs.
    /// `facts` (by trace path) and `traceCount` feed each signature's fleet numbers (traces
    /// affected, builds, hosts, first and last seen).
    public static func signatures(
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
        return signatures(traces, origins: TraceOrigins(traceFacts), traceCount: traceCount)
    }

    /// As above for `stalls[i]`, the stalls of the trace with `origins.facts[i]`: one pass over
    /// the stalls, copying none of them, on up to `workers` threads. Traces are added up in
    /// runs of `run` (`tallyRun`), merged in order, so the sums (some in floating point) are the
    /// same whatever `workers` is.
    static func signatures(
        _ stalls: [[AnalyzedStall]], origins: TraceOrigins, traceCount: Int, workers: Int = 1,
        run tallyRun: Int = tallyRun
    ) -> [StallReport.Signature] {
        let runs = (stalls.count + tallyRun - 1) / tallyRun
        let partials = Locked([[SignatureKey: SignatureTally]](repeating: [:], count: runs))
        TraceLoader.forEachIndex(runs, workers: workers) { run in
            var tallies: [SignatureKey: SignatureTally] = [:]
            for trace in run * tallyRun..<min(stalls.count, (run + 1) * tallyRun) {
                let analyzed = stalls[trace]
                for index in analyzed.indices {
                    let key = analyzed[index].key
                    tallies[key, default: SignatureTally()].add(
                        analyzed[index], member: .init(trace: trace, stall: index), key: key, origins: origins)
                }
            }
            partials.withLock { $0[run] = tallies }
        }
        var tallies: [SignatureKey: SignatureTally] = [:]
        for partial in partials.withLock({ $0 }) {
            for (key, tally) in partial { tallies[key, default: SignatureTally()].merge(tally) }
        }
        var result = tallies.map {
            (
                key: $0.key, total: $0.value.totalNanos,
                signature: $0.value.signature(
                    $0.key, stalls: stalls, origins: origins, traceCount: traceCount)
            )
        }
        result.sort {
            ($0.total, $0.signature.count) != ($1.total, $1.signature.count)
                ? ($0.total, $0.signature.count) > ($1.total, $1.signature.count) : $0.key < $1.key
        }
        return result.map(\.signature)
    }

    /// How many traces' stalls `signatures` adds up on one thread before merging.
    static let tallyRun = 1024

    /// `frame` ready to print, named by `names`.
    static func stackFrame(_ frame: Frame, names: FrameNamer) -> StallReport.StackFrame {
        StallReport.StackFrame(
            name: names.name(frame), symbol: names.fullName(frame), module: frame.module,
            source: names.source(frame), system: frame.isSystem)
    }

    /// From the header's start (else the first timestamp) to the last timestamp, in nanoseconds.
    static func runTime(of loaded: LoadedTrace) -> UInt64 {
        var first = UInt64.max
        var last: UInt64 = 0
        func see(_ time: UInt64) {
            first = min(first, time)
            last = max(last, time)
        }
        // By index: `for stall in stalls` copied every stall and `samples.last` its last sample,
        // and a fleet report asks this of every trace twice.
        let stalls = loaded.trace.stalls
        for index in stalls.indices {
            see(stalls[index].start)
            if let end = stalls[index].end { see(end) }
            let count = stalls[index].samples.count
            if count > 0 { see(stalls[index].samples[count - 1].time) }
        }
        for record in loaded.trace.frameClock { see(record.intervalStart &+ record.intervalLength) }
        for record in loaded.trace.latencyHistograms { see(record.intervalStart &+ record.intervalLength) }
        for record in loaded.trace.congestion { see(record.intervalStart &+ record.intervalLength) }
        if loaded.trace.lastCalloutEnd > 0 { see(loaded.trace.lastCalloutEnd) }
        let start = loaded.trace.header?.clockBase ?? first
        return last > start ? last - start : 0
    }

    static func frameStats(_ traces: [LoadedTrace]) -> StallReport.FrameStats? {
        let records = traces.indices.flatMap { traces[$0].trace.frameClock }
        guard !records.isEmpty else { return nil }
        let expected = records.reduce(0) { $0 + $1.expected }
        let delivered = records.reduce(0) { $0 + $1.delivered }
        let dropped = records.reduce(0) { $0 + $1.dropped }
        let seconds = Double(records.reduce(0) { $0 + $1.intervalLength }) / 1e9
        return StallReport.FrameStats(
            expected: expected, delivered: delivered, dropped: dropped,
            fps: seconds == 0 ? 0 : round(Double(delivered) / seconds, 2))
    }

    static func latency(_ traces: [LoadedTrace]) -> StallReport.LatencyStats? {
        var perBucket = [UInt64](repeating: 0, count: LatencyBuckets.count)
        for index in traces.indices {
            for record in traces[index].trace.latencyHistograms {
                for bucket in record.buckets where Int(bucket.index) < LatencyBuckets.count {
                    perBucket[Int(bucket.index)] += bucket.count
                }
            }
        }
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
    /// `body(i)` for every `i` in `0..<count` on up to `workers` threads, in runs of 256, the
    /// runs in order (read them in turn: flattening would copy every value).
    static func map<Value: Sendable>(
        _ count: Int, workers: Int, _ body: @Sendable (Int) -> Value
    ) -> [[Value]] {
        let run = 256
        let runs = (count + run - 1) / run
        let parts = Locked([[Value]](repeating: [], count: runs))
        TraceLoader.forEachIndex(runs, workers: workers) { index in
            let part = (index * run..<min(count, (index + 1) * run)).map(body)
            parts.withLock { $0[index] = part }
        }
        return parts.withLock { $0 }
    }
}

/// What `ReportBuilder.report` takes from one trace: its facts, run time and line in the
/// trace list, and its stalls added up.
struct TraceTotals: Sendable {
    var facts: TraceFacts
    var run: UInt64
    /// Whether the trace recorded callouts (`full` mode), and their time.
    var full: Bool
    var calloutNanos: UInt64
    var info: StallReport.TraceInfo
    var stalls = StallTotals()

    init(_ loaded: LoadedTrace, stalls analyzed: [AnalyzedStall]) {
        facts = TraceFacts(loaded)
        run = ReportBuilder.runTime(of: loaded)
        full = loaded.trace.header?.mode == .full || loaded.trace.calloutCount > 0
        calloutNanos = loaded.trace.calloutNanos
        let header = loaded.trace.header
        info = StallReport.TraceInfo(
            path: loaded.path, process: header?.processName ?? "", pid: header?.pid ?? 0,
            mode: header?.mode, bytes: loaded.byteCount, runTimeSeconds: round(Double(run) / 1e9, 6),
            stalls: analyzed.count, problems: loaded.trace.outcome.problems.map(\.description))
        info.traceID = facts.traceID
        info.host = facts.host
        info.build = facts.build
        info.appVersion = facts.appVersion
        stalls.add(analyzed)
    }
}

/// Stalls counted by tier and category, and their times: integers, so they add up the same in
/// any order.
struct StallTotals: Sendable {
    /// By position in `Tier.allCases`.
    var tiers = [Int](repeating: 0, count: Tier.allCases.count)
    /// By `StallCategory.ordinal`.
    var categories = [Int](repeating: 0, count: StallCategory.allCases.count)
    var categoryNanos = [UInt64](repeating: 0, count: StallCategory.allCases.count)
    var overrun: UInt64 = 0
    var total: UInt64 = 0
    var unsampled: UInt64 = 0
    var unfinished = 0
    var hangs = 0

    /// Counts `stalls` (by index: `for stall in stalls` copied every stall).
    mutating func add(_ stalls: [AnalyzedStall]) {
        for index in stalls.indices {
            unsampled += stalls[index].unsampledNanos
            if stalls[index].stall.end == nil { unfinished += 1 }
            let tier = stalls[index].stall.tier
            if tier >= .hang { hangs += 1 }
            tiers[Tier.allCases.firstIndex(of: tier) ?? 0] += 1
            categories[stalls[index].category.ordinal] += 1
            stalls[index].breakdown.addCategoryNanos(to: &categoryNanos)
            overrun += stalls[index].overrunNanos
            total += stalls[index].durationNanos
        }
    }

    /// Adds what `other` counted.
    mutating func add(_ other: StallTotals) {
        for index in tiers.indices { tiers[index] += other.tiers[index] }
        for index in categories.indices { categories[index] += other.categories[index] }
        for index in categoryNanos.indices { categoryNanos[index] += other.categoryNanos[index] }
        overrun += other.overrun
        total += other.total
        unsampled += other.unsampled
        unfinished += other.unfinished
        hangs += other.hangs
    }
}
