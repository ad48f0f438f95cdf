import StallwatchCore

/// What a report adds up of traces, a trace at a time in order, on the thread that analyzed
/// them: each trace's facts and line, its stalls' totals and every signature's tally, its
/// frames, loop latency and congestion. Once a trace is added, its stalls can be let go.
///
/// All integers but the signatures' shares, which are summed in the same order whatever the
/// number of workers (`ReportBuilder.runLength`): a report does not depend on it.
struct FleetTally: Sendable {
    /// The group of the stalls without the `--by` key.
    static let noValue = "(none)"

    /// Each trace's own numbers, in order, in the runs they were added up in (merging appends
    /// a run, so no trace's numbers are copied).
    var runs: [[TraceTotals]] = [[]]
    var signatures = SignatureTallies()
    var stalls = StallTotals()
    var frames = FrameTotals()
    /// Loop-latency samples by `LatencyBuckets` bucket.
    var latency = [UInt64](repeating: 0, count: LatencyBuckets.count)
    var congestion = CongestionAnalysis.Tally()
    var fleet = FleetTotals()
    /// The texts of the signatures whose stalls are left out (`ReportBuilder.leavingOut`), and
    /// how many stalls of each were.
    var leftOut: [String: Int] = [:]
    /// Whether expected-long stalls count with the others (`ReportBuilder.includeExpected`);
    /// else they are set apart in `expected`.
    var includeExpected = false
    var expected = CountAndTime()
    /// The key stalls are grouped by (`ReportBuilder.groupBy`), and each value's stalls.
    var groupBy: String?
    var grouped: [String: CountAndTime] = [:]

    /// How many traces were added.
    var traceCount: Int { fleet.traces }

    /// Adds `loaded`, trace number `number`, with its stalls' figures, after the traces added
    /// so far.
    mutating func add(_ loaded: LoadedTrace, number: Int, stalls all: [StallFigures]) {
        // Filtering makes the array its own copy, so it runs only when a stall is expected.
        var analyzed = all
        if !includeExpected && all.contains(where: { $0.expected != nil }) {
            analyzed.removeAll { stall in
                guard stall.expected != nil else { return false }
                expected.add(stall)
                return true
            }
        }
        if let groupBy {
            for stall in analyzed {
                grouped[stall.context[groupBy] ?? Self.noValue, default: CountAndTime()].add(stall)
            }
        }
        if !leftOut.isEmpty {
            analyzed.removeAll { stall in
                let text = stall.key.text
                guard leftOut[text] != nil else { return false }
                leftOut[text]! += 1
                return true
            }
        }
        var totals = TraceTotals(loaded, number: number, stalls: analyzed.count)
        totals.rates = RunRates(stalls: analyzed, runNanos: totals.run)
        signatures.add(analyzed, trace: number, facts: totals.facts, clock: loaded.trace.frameClock)
        stalls.add(analyzed)
        frames.add(loaded.trace.frameClock)
        for record in loaded.trace.latencyHistograms {
            for bucket in record.buckets where Int(bucket.index) < LatencyBuckets.count {
                latency[Int(bucket.index)] += bucket.count
            }
        }
        congestion.add(loaded.trace)
        fleet.add(totals)
        runs[runs.count - 1].append(totals)
    }

    /// Adds what `later` added up, from traces after these.
    mutating func merge(_ later: FleetTally) {
        runs += later.runs
        signatures.merge(later.signatures)
        stalls.add(later.stalls)
        frames.add(later.frames)
        for index in latency.indices { latency[index] += later.latency[index] }
        congestion.merge(later.congestion)
        fleet.add(later.fleet)
        for (text, count) in later.leftOut { leftOut[text, default: 0] += count }
        expected.add(later.expected)
        for (value, part) in later.grouped { grouped[value, default: CountAndTime()].add(part) }
    }
}

/// What the fleet summary and the run-time figures add up of each trace.
struct FleetTotals: Sendable {
    var traces = 0
    var processes = Set<String>()
    var hosts = Set<String>()
    var builds = Set<String>()
    var appVersions = Set<String>()
    var bytes = 0
    /// The earliest start and latest end on the wall clock (ns since 1970).
    var first: UInt64?
    var last: UInt64?
    var runNanos: UInt64 = 0
    /// Run time and callout time of the traces that recorded callouts (`full` mode).
    var fullRunNanos: UInt64 = 0
    var calloutNanos: UInt64 = 0
    var sawFull = false

    /// Counts `trace`.
    mutating func add(_ trace: TraceTotals) {
        traces += 1
        if let process = trace.process { processes.insert(process) }
        if let host = trace.facts.host { hosts.insert(host) }
        builds.insert(trace.info.build)
        if let version = trace.facts.appVersion { appVersions.insert(version) }
        bytes += trace.info.bytes
        if let start = trace.facts.wallClockStart { see(start, start &+ trace.run) }
        runNanos += trace.run
        if trace.full {
            sawFull = true
            fullRunNanos += trace.run
            calloutNanos += trace.calloutNanos
        }
    }

    /// Adds what `other` counted.
    mutating func add(_ other: FleetTotals) {
        traces += other.traces
        processes.formUnion(other.processes)
        hosts.formUnion(other.hosts)
        builds.formUnion(other.builds)
        appVersions.formUnion(other.appVersions)
        bytes += other.bytes
        if let first = other.first, let last = other.last { see(first, last) }
        runNanos += other.runNanos
        fullRunNanos += other.fullRunNanos
        calloutNanos += other.calloutNanos
        sawFull = sawFull || other.sawFull
    }

    private mutating func see(_ start: UInt64, _ end: UInt64) {
        first = min(first ?? start, start)
        last = max(last ?? end, end)
    }

    /// The fleet summary (with the inputs that could not be read).
    func summary(unreadable: [StallReport.Unreadable]) -> StallReport.FleetSummary {
        StallReport.FleetSummary(
            traces: traces, processes: processes.count, hosts: hosts.count, builds: builds.count,
            appVersions: appVersions.count, bytes: bytes, firstStart: first.map(isoTime), lastEnd: last.map(isoTime),
            unreadable: unreadable)
    }
}

/// Frame-clock records added up.
struct FrameTotals: Sendable {
    var records = 0
    var expected: UInt64 = 0
    var delivered: UInt64 = 0
    var dropped: UInt64 = 0
    var intervalNanos: UInt64 = 0

    /// Counts `clock`'s records.
    mutating func add(_ clock: [TraceRecord.FrameClock]) {
        records += clock.count
        for index in clock.indices {
            expected += clock[index].expected
            delivered += clock[index].delivered
            dropped += clock[index].dropped
            intervalNanos += clock[index].intervalLength
        }
    }

    /// Adds what `other` counted.
    mutating func add(_ other: FrameTotals) {
        records += other.records
        expected += other.expected
        delivered += other.delivered
        dropped += other.dropped
        intervalNanos += other.intervalNanos
    }

    /// The report's frame numbers; nil without records.
    var stats: StallReport.FrameStats? {
        guard records > 0 else { return nil }
        let seconds = Double(intervalNanos) / 1e9
        return StallReport.FrameStats(
            expected: expected, delivered: delivered, dropped: dropped,
            fps: seconds == 0 ? 0 : round(Double(delivered) / seconds, 2))
    }
}

/// What a report keeps of each trace: its facts, run time and line in the trace list.
struct TraceTotals: Sendable {
    /// The trace's number among the inputs.
    var number: Int
    var facts: TraceFacts
    var run: UInt64
    /// How long the process was stopped (left out of `run`), and the stalls only that made long.
    var stopped: (nanos: UInt64, stalls: Int)
    /// Whether the trace recorded callouts (`full` mode), and their time.
    var full: Bool
    var calloutNanos: UInt64
    var info: StallReport.TraceInfo
    /// The header's process name (nil without a header).
    var process: String?
    /// Its run time, hang time and overrun.
    var rates = RunRates()

    init(_ loaded: LoadedTrace, number: Int, stalls: Int) {
        self.number = number
        facts = TraceFacts(loaded)
        run = ReportBuilder.runTime(of: loaded)
        stopped = (loaded.trace.stoppedNanos, loaded.trace.stallsOnlyStopped)
        full = loaded.trace.header?.mode == .full || loaded.trace.calloutCount > 0
        calloutNanos = loaded.trace.calloutNanos
        let header = loaded.trace.header
        info = StallReport.TraceInfo(
            path: loaded.path, process: header?.processName ?? "", pid: header?.pid ?? 0,
            mode: header?.mode, bytes: loaded.byteCount, runTimeSeconds: round(Double(run) / 1e9, 6),
            stalls: stalls, problems: loaded.trace.outcome.problems.map(\.description))
        info.traceID = facts.traceID
        info.host = facts.host
        info.build = facts.build
        info.appVersion = facts.appVersion
        info.watched = loaded.trace.watched.map { .init(label: $0.label, how: $0.how, tid: $0.tid) }
        process = header?.processName
    }
}

/// Stalls counted by tier and category, and their times: integers, so they add up the same in
/// any order.
struct StallTotals: Sendable {
    /// By position in `Tier.allCases`.
    var tiers = [Int](repeating: 0, count: Tier.allCases.count)
    /// By `StallCategory.ordinal`.
    var categories = [Int](repeating: 0, count: StallCategory.count)
    var categoryNanos = [UInt64](repeating: 0, count: StallCategory.count)
    var overrun: UInt64 = 0
    var total: UInt64 = 0
    var unsampled: UInt64 = 0
    var unfinished = 0
    var hangs = 0
    var hangNanos: UInt64 = 0

    /// How many stalls were counted (each in one tier).
    var count: Int { tiers.reduce(0, +) }

    /// Counts `stalls` (by index: `for stall in stalls` copied every stall).
    mutating func add(_ stalls: [StallFigures]) {
        for index in stalls.indices {
            unsampled += stalls[index].unsampledNanos
            if stalls[index].unfinished { unfinished += 1 }
            let tier = stalls[index].tier
            if tier >= .hang {
                hangs += 1
                hangNanos += stalls[index].durationNanos
            }
            tiers[tier.ordinal] += 1
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
        hangNanos += other.hangNanos
    }
}

/// Stalls counted and their time added up (expected-long ones, or one group's).
struct CountAndTime: Sendable {
    var count = 0
    var nanos: UInt64 = 0

    mutating func add(_ stall: StallFigures) {
        count += 1
        nanos &+= stall.durationNanos
    }

    mutating func add(_ other: CountAndTime) {
        count += other.count
        nanos &+= other.nanos
    }

    /// As the report gives it.
    var stats: StallReport.CountAndTime { StallReport.CountAndTime(stalls: count, ms: round(ms(nanos), 3)) }
}

extension FleetTally {
    /// The groups by `key`'s values, most time first; empty without a key.
    func groups(by key: String?) -> [StallReport.Group] {
        guard let key else { return [] }
        return grouped.map {
            StallReport.Group(key: key, value: $0.key, stalls: $0.value.count, ms: round(ms($0.value.nanos), 3))
        }
        .sorted { ($0.ms, $1.value) > ($1.ms, $0.value) }
    }
}
