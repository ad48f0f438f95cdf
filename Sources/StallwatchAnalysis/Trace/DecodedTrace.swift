@_spi(StallwatchPackage) import StallwatchCore

/// A whole trace decoded and put together: the header, the stalls with their samples'
/// frames symbolicated from the trace's `symbol` and `module` records, and the summaries.
///
/// Built from whatever decoded: a damaged trace gives the stalls its surviving records
/// describe (`outcome` lists what was lost). References to definitions that never arrived
/// are filled in plainly (an unknown call site becomes a `post` at file `"?"`, line 0, labelled
/// `"unknown call site N"`; an unknown mode is named `"mode N"`).
///
/// A plain value; use it on any thread.
public struct DecodedTrace: Sendable {
    /// The header, if the trace has one (the first, if several: a second is damage).
    public var header: TraceRecord.Header?
    /// The architecture the trace was recorded on (its `platform` record), e.g. `"x86_64"`;
    /// nil for a trace written before that record existed (those were all recorded on x86_64,
    /// the only platform the recorder has run on) or that lost it to damage.
    public var architecture: String?
    /// Where the trace comes from (its `origin` record: trace id, host, executable, build id,
    /// app version); nil for a trace written before that record existed.
    public var origin: TraceRecord.Origin?
    /// The call sites by id (what `CongestedIteration.SiteTime.site` names).
    public var callSites: [UInt64: TraceRecord.CallSite] = [:]
    /// The module map, in file order.
    public var modules: [TraceRecord.Module] = []
    /// The stalls, by start time, each without its samples: stall `i`'s are rows
    /// `table.ranges[i]` of `table`. A stall with no `stallEnded` record has the `unfinished`
    /// flag, no end, and the tier it had reached by its last sample.
    package var bareStalls: [Stall] = []
    /// Every stall's samples as the decoder read them: one table, built into `Sample` values
    /// only when asked (`stalls`, `samples(ofStall:)`).
    package var table = SampleTable()
    /// How many `callout` records the trace holds (`full` mode).
    public var calloutCount = 0
    /// The callouts' total duration in nanoseconds (`full` mode): the loop's busy time.
    public var calloutNanos: UInt64 = 0
    /// The end of the last callout (CLOCK_MONOTONIC ns), 0 without callouts.
    public var lastCalloutEnd: UInt64 = 0
    /// The congestion counts, in file order.
    public var congestion: [TraceRecord.Congestion] = []
    /// The congested iterations one by one (traces written before that record existed have
    /// only the counts), in file order.
    public var congestedIterations: [TraceRecord.CongestedIteration] = []
    /// The frame-clock summaries, in file order.
    public var frameClock: [TraceRecord.FrameClock] = []
    /// The loop-latency histograms, in file order.
    public var latencyHistograms: [TraceRecord.LatencyHistogram] = []
    /// The records the recorder said it dropped, summed.
    public var lostRecords: UInt64 = 0
    /// The latest time the recording says it was running (`recordedUntil`), if it says.
    public var recordedUntil: UInt64?
    /// What the recording watched (`watched` records), in the order it began to; one entry of
    /// `how` `nothing` when the process ran nothing it could watch; empty in traces of before.
    public var watched: [WatchedExecutor] = []
    /// When the process was stopped (SIGSTOP, a debugger: `stopped` records), merged, disjoint
    /// and in order. Left out of stalls, run time and dropped frames.
    public var stopped: [Range<UInt64>] = []
    /// The stalls left out because, less the time the process was stopped in them, they were
    /// within the budget: work the stop made look long.
    public var stallsOnlyStopped = 0
    /// What the loop ran before each stall (`stallLeadUp` records), by stall id (the last
    /// counts); traces recorded without the flight recorder have none.
    public var leadUps: [UInt64: TraceRecord.StallLeadUp] = [:]
    /// Samples whose stall has no `stallBegan` record (lost to damage); left out of `stalls`.
    public var orphanSamples = 0
    /// How decoding went.
    public var outcome = TraceOutcome()
    /// Summaries (frame clock, latency, congestion) left out because an earlier one of their
    /// kind started at the same time: repeated records.
    var repeatedSummaries = 0
    /// The start of every summary read, by kind (`isNew(_:in:)`).
    private var congestionStarts: Set<UInt64> = []
    private var frameClockStarts: Set<UInt64> = []
    private var latencyStarts: Set<UInt64> = []
    /// Decodes `bytes` and assembles the result; `fileName` is only used in error messages.
    public init(decoding bytes: [UInt8], fileName: String? = nil) {
        self = bytes.withUnsafeBytes { DecodedTrace(decoding: $0, fileName: fileName) }
    }

    /// Decodes `bytes` and assembles the result; `fileName` is only used in error messages.
    public init(decoding bytes: UnsafeRawBufferPointer, fileName: String? = nil) {
        var assembler = StallAssembler(byteCount: bytes.count)
        var parser = TraceParser(fileName: fileName)
        read(bytes, with: &parser, into: &assembler)
        outcome = parser.outcome
        assemble(assembler, fileName: fileName, inputLength: bytes.count)
    }

    /// Reads every record of `bytes` with `parser`, the stalls' into `assembler`. A function of
    /// its own, kept small, so that the per-record calls in its loop are inlined into it.
    @inline(never)
    private mutating func read(
        _ bytes: UnsafeRawBufferPointer, with parser: inout TraceParser, into assembler: inout StallAssembler
    ) {
        // Callouts, nearly every record of a full-mode trace, are only added up: straight here,
        // not through a closure and `add`'s switch (that made a serial decode ten times slower
        // than the split one, which counts them the same way).
        // Samples, stalls' beginnings and ends, call sites and symbols, most records of a fleet's
        // traces, go straight into the assembler.
        while true {
            while parser.takeStallRecord(in: bytes, into: &assembler) {}
            guard let record = parser.next(in: bytes) else { break }
            if case .callout(let callout) = record {
                add(callout)
            } else {
                add(record, to: &assembler)
            }
        }
    }

    /// `intervals` in order, overlapping or touching ones joined.
    static func merged(_ intervals: [Range<UInt64>]) -> [Range<UInt64>] {
        var result: [Range<UInt64>] = []
        for interval in intervals.sorted(by: { $0.lowerBound < $1.lowerBound }) where !interval.isEmpty {
            if let last = result.last, interval.lowerBound <= last.upperBound {
                result[result.count - 1] = last.lowerBound..<max(last.upperBound, interval.upperBound)
            } else {
                result.append(interval)
            }
        }
        return result
    }

    /// The frames the frame clock counted dropped while the process was stopped are not the
    /// app's: each summary loses the frames due in its stopped time (from its dropped ones
    /// and from those expected). (The writer leaves stopped time out of loop iterations
    /// itself, before their latency is counted.)
    private mutating func leaveStoppedTimeOut() {
        for index in frameClock.indices {
            let record = frameClock[index]
            guard record.intervalLength > 0 else { continue }
            let interval = record.intervalStart..<record.intervalStart.saturatingAdding(record.intervalLength)
            let stoppedTime = StallAccounting.stoppedNanos(in: interval, of: stopped)
            guard stoppedTime > 0 else { continue }
            let due = UInt64(
                (Double(stoppedTime) / Double(record.intervalLength) * Double(record.expected)).rounded())
            let left = min(due, record.dropped)
            frameClock[index].dropped -= left
            frameClock[index].expected -= left
        }
    }

    /// How long the process was stopped in all (`stopped`).
    public var stoppedNanos: UInt64 { stopped.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }

    /// The latest time any record says the recording ran: its `recordedUntil`, the end of its
    /// last summary, callout or stall, its last sample. How far an unfinished stall is known
    /// to have run.
    private func lastRecordedTime(_ assembler: StallAssembler) -> UInt64? {
        var last = recordedUntil ?? 0
        last = max(last, lastCalloutEnd)
        for record in frameClock { last = max(last, record.intervalStart &+ record.intervalLength) }
        for record in latencyHistograms { last = max(last, record.intervalStart &+ record.intervalLength) }
        for record in congestion { last = max(last, record.intervalStart &+ record.intervalLength) }
        for record in assembler.ended { last = max(last, record.end) }
        for sample in assembler.samples { last = max(last, sample.time) }
        return last > 0 ? last : nil
    }

    /// Takes in one callout: the loop's busy time.
    mutating func add(_ callout: TraceRecord.Callout) {
        calloutCount += 1
        calloutNanos &+= callout.duration
        lastCalloutEnd = max(lastCalloutEnd, callout.start &+ callout.duration)
    }

    /// Takes in one record, in file order (the one place that says what each kind adds).
    mutating func add(_ record: consuming TraceRecord, to assembler: inout StallAssembler) {
        switch record {
        case .header(let header): if self.header == nil { self.header = header }
        case .platform(let platform): architecture = platform.architecture
        case .origin(let origin): self.origin = origin
        case .module(let module): modules.append(module)
        case .callout(let callout): add(callout)
        case .congestion(let record):
            if Self.isNew(
                record.intervalStart, after: congestion, { $0.intervalStart }, in: &congestionStarts,
                counting: &repeatedSummaries)
            {
                congestion.append(record)
            }
        case .congestedIteration(let record): congestedIterations.append(record)
        case .frameClock(let record):
            if Self.isNew(
                record.intervalStart, after: frameClock, { $0.intervalStart }, in: &frameClockStarts,
                counting: &repeatedSummaries)
            {
                frameClock.append(record)
            }
        case .latencyHistogram(let record):
            if Self.isNew(
                record.intervalStart, after: latencyHistograms, { $0.intervalStart }, in: &latencyStarts,
                counting: &repeatedSummaries)
            {
                latencyHistograms.append(record)
            }
        case .lostRecords(let record): lostRecords &+= record.count
        case .recordedUntil(let time): recordedUntil = max(recordedUntil ?? 0, time)
        case .stopped(let from, let length): stopped.append(from..<from.saturatingAdding(length))
        case .watched(let executor): watched.append(executor)
        case .stallLeadUp(let record): leadUps[record.id] = record
        default: assembler.add(record)
        }
    }

    /// Whether no summary of its kind started at `start` before (`kept` are the ones of that
    /// kind taken so far, `start` gives their starts, all different): the recorder writes each
    /// kind's intervals back to back, so one that starts where another did repeats it, and is
    /// counted in `repeats` instead.
    ///
    /// The intervals come in time order: while each starts after the last kept, nothing is
    /// hashed (`starts` stays empty). The first that does not fills `starts` with the start of
    /// every one kept; from then on `starts` holds them all.
    private static func isNew<Summary>(
        _ start: UInt64, after kept: [Summary], _ startOf: (Summary) -> UInt64, in starts: inout Set<UInt64>,
        counting repeats: inout Int
    ) -> Bool {
        if starts.isEmpty {
            guard let last = kept.last, start <= startOf(last) else { return true }
            for summary in kept { starts.insert(startOf(summary)) }
        }
        if starts.insert(start).inserted { return true }
        repeats += 1
        return false
    }

    /// Joins the stall records once every record is in: the stalls and their samples' table.
    /// Records that repeat earlier ones are counted once and reported in
    /// `outcome` (`TraceError.Problem.repeatedRecords`).
    mutating func assemble(_ assembler: StallAssembler, fileName: String?, inputLength: Int) {
        callSites = assembler.sites
        let thresholds = header?.thresholds ?? .default
        stopped = Self.merged(stopped)
        let made = assembler.stalls(
            modules: modules, thresholds: thresholds, traceEnd: lastRecordedTime(assembler), stopped: stopped)
        (bareStalls, orphanSamples, table) = (made.stalls, made.orphans, made.table)
        stallsOnlyStopped = made.onlyStopped
        if !stopped.isEmpty { leaveStoppedTimeOut() }
        var repeats: [String] = []
        if made.repeatedStalls > 0 { repeats.append("\(made.repeatedStalls) begun again (a stall id seen before)") }
        if made.repeatedSamples > 0 {
            repeats.append("\(made.repeatedSamples) samples repeated (a stall, index and time seen before)")
        }
        if repeatedSummaries > 0 {
            repeats.append("\(repeatedSummaries) summaries over time already summarised")
        }
        if !repeats.isEmpty {
            let what = "records repeat earlier ones: " + repeats.joined(separator: ", ")
            outcome.problems.insert(
                TraceError(fileName: fileName, offset: inputLength, problem: .repeatedRecords(what: what)),
                at: outcome.problems.firstIndex { $0.problem.isTruncation } ?? outcome.problems.endIndex)
        }
    }

    /// The stalls, by start time, each with its samples (`samples(ofStall:)`), in time order.
    /// Builds every sample: an analysis reads the table instead.
    public var stalls: [Stall] {
        bareStalls.indices.map { index in
            var stall = bareStalls[index]
            stall.samples = samples(ofStall: index)
            return stall
        }
    }

    /// The samples of stall `index` (of `stalls`), in time order, built from the table.
    public func samples(ofStall index: Int) -> [Sample] { table.samples(of: index, stall: bareStalls[index].id) }

    /// The time of stall `index`'s last sample, nil without samples.
    package func lastSampleTime(ofStall index: Int) -> UInt64? { table.lastTime(of: index) }

    /// The trace without its stalls and their samples: what a report keeps once it has added
    /// them up.
    package mutating func dropStalls() {
        bareStalls = []
        table = SampleTable()
    }
}

/// Gathers definitions and stall records, then joins them once everything is read (symbols
/// are usually written after the samples that need them).
struct StallAssembler {
    var sites: [UInt64: TraceRecord.CallSite] = [:]
    var modes: [UInt16: String] = [:]
    var annotations: [UInt64: Annotation] = [:]
    var symbols: [UInt64: TraceRecord.Symbol] = [:]
    var began: [TraceRecord.StallBegan] = []
    /// The `stallEnded` records in file order (of several for one stall, the last counts).
    var ended: [TraceRecord.StallEnded] = []
    /// The `stallRetimed` records, by stall (the last counts).
    var retimed: [UInt64: TraceRecord.StallRetimed] = [:]
    /// The `stallContext` records, by stall (the last counts).
    var contexts: [UInt64: TraceRecord.StallContext] = [:]
    /// The samples in file order, their stacks and wait channels by number.
    var samples: [PendingSample] = []
    var stacks = StackTable()
    var wchans = StringTable()
    var sources: [SampleKey: SampleSource] = [:]
    /// Kinds 18 and 19, by stall and sample time.
    var counters: [SampleKey: TraceRecord.SampleCounters] = [:]
    var waits: [SampleKey: TraceRecord.SampleWait] = [:]
    var asyncEnds: [SampleKey: AsyncChainEnd] = [:]

    init() {}

    /// An assembler for a trace of `byteCount` bytes, with room for about as many samples as
    /// a trace of stalls that long holds (a sample record takes a few dozen bytes), so the
    /// samples are not copied as they grow.
    @inline(never)
    init(byteCount: Int) {
        samples.reserveCapacity(min(byteCount / 24, 1 << 20))
    }

    /// A sample, as the records about it name it: its stall and its index in the stall.
    struct SampleKey: Hashable, Sendable {
        var stall: UInt64
        var sample: UInt64
    }

    mutating func add(_ record: TraceRecord) {
        switch record {
        case .callSite(let site): sites[site.id] = site
        case .modeName(let mode): modes[mode.id] = mode.name
        case .annotation(let definition): annotations[definition.id] = definition.annotation
        case .symbol(let symbol): symbols[symbol.address] = symbol
        case .stallBegan(let record): began.append(record)
        case .stallEnded(let record): ended.append(record)
        case .stallRetimed(let record): retimed[record.id] = record
        case .stallContext(let record): contexts[record.id] = record
        case .sample(let sample):
            samples.append(
                PendingSample(
                    stall: sample.stall, index: UInt32(truncatingIfNeeded: sample.index), tid: sample.tid,
                    lookCode: PendingSample.lookCode(sample.look), time: sample.time, cpuTime: sample.cpuTime,
                    annotation: sample.annotation, syscall: sample.syscall, stack: stacks.number(of: sample.frames),
                    wchan: sample.wchan.map { wchans.number(of: $0) } ?? -1, state: sample.state,
                    captureTimedOut: sample.captureTimedOut))
        case .sampleProvenance(let record):
            sources[SampleKey(stall: record.stall, sample: record.sample)] = record.source
        case .sampleCounters(let record): counters[SampleKey(stall: record.stall, sample: record.sample)] = record
        case .sampleWait(let record): waits[SampleKey(stall: record.stall, sample: record.sample)] = record
        case .sampleAsyncChain(let record): markAsync(record)
        default: break
        }
    }

    /// Marks the async frames of the sample `record` follows (a recorder writes it right after
    /// its sample): that sample's stack is renumbered as the same addresses with its frames from
    /// `firstAsync` on async (`StackTable.number(of:firstAsync:)`).
    mutating func markAsync(_ record: TraceRecord.SampleAsyncChain) {
        asyncEnds[SampleKey(stall: record.stall, sample: record.sample)] = record.end
        guard let last = samples.indices.last, samples[last].stall == record.stall,
            UInt64(samples[last].index) == record.sample
        else { return }
        let addresses = stacks.stacks[Int(samples[last].stack)]
        guard !StackTable.hasAsyncMark(addresses), record.firstAsync < UInt64(addresses.count) else { return }
        samples[last].stack = Int32(stacks.number(of: addresses, firstAsync: Int(record.firstAsync)))
    }

    /// Takes in the sample record whose payload `reader` holds, all of it or (on a throw) nothing.
    /// A sample whose encoded frames are the same bytes as the last one's gets its stack without
    /// decoding them: samples in a row mostly repeat their stack.
    @inline(__always)
    mutating func takeSample(_ reader: inout TraceByteReader) throws(TraceFieldError) {
        var (sample, wchan) = try TraceParser.parseSampleFields(&reader, version: TraceFormat.version)
        let count = try TraceParser.frameCount(&reader)
        let bytes = UnsafeRawBufferPointer(start: reader.base + reader.position, count: reader.end - reader.position)
        let stack: Int
        if let last = stacks.lastEncoding, last.count == count, sameBytes(last.bytes, bytes) {
            stack = last.stack
            reader.position = reader.end
        } else {
            stacks.scratch.removeAll(keepingCapacity: true)
            try TraceParser.readFrames(&reader, count: count, into: &stacks.scratch)
            try reader.finish()
            stack = stacks.number(of: stacks.scratch)
            stacks.lastEncoding = (bytes, count, stack)
        }
        sample.stack = Int32(truncatingIfNeeded: stack)
        sample.wchan = Int32(truncatingIfNeeded: wchan.map { wchans.number(of: $0) } ?? -1)
        samples.append(sample)
    }

    /// The stalls, by start time, each with no samples, the number of orphan samples, every
    /// stall's samples as one table (`ranges[i]` are `stalls[i]`'s), and how many `stallBegan`
    /// and sample records repeated earlier ones (left out).
    ///
    /// A stall with no `stallEnded` record is unfinished. The last one (the process was killed
    /// in it) ran at least until its last sample and its budget (the watchdog saw it past start
    /// + budget) and is taken to have run until `traceEnd`, the last time the trace says the
    /// recording ran: a recorder writes a stall's end as soon as it ends. One with a later stall
    /// after it lost its end record (damage): it is known to have run until its last sample.
    /// That is its `end`, and its duration and tier follow from it in every output.
    ///
    /// Each stall gets the times the process was `stopped` within it (`Stall.stopped`), left out
    /// of its duration and tier; a stall that was within the budget without them is left out
    /// (counted in `onlyStopped`).
    func stalls(
        modules: [TraceRecord.Module], thresholds: TierThresholds, traceEnd: UInt64? = nil,
        stopped: [Range<UInt64>] = []
    ) -> (
        stalls: [Stall], orphans: Int, table: SampleTable, repeatedStalls: Int, repeatedSamples: Int,
        onlyStopped: Int
    ) {
        // Of several modules with one index, the last counts.
        var modulePaths: [(index: UInt32, path: String)] = []
        for module in modules {
            if let known = modulePaths.firstIndex(where: { $0.index == module.index }) {
                modulePaths[known].path = module.path
            } else {
                modulePaths.append((module.index, module.path))
            }
        }
        let symbolizer = FrameSymbols(symbols: symbols, modulePaths: modulePaths)
        // Each distinct address list becomes one `[Frame]` that its samples share, instead of a
        // copy per sample: a fleet report holds every sample at once.
        let stackFrames = stacks.stacks.map { StackTable.frames($0, symbolizer) }

        // Each stall's samples, by the first `stallBegan` of its id (a later one is ignored).
        var slots: [UInt64: Int] = [:]
        slots.reserveCapacity(began.count)
        var stallRecords: [TraceRecord.StallBegan] = []
        stallRecords.reserveCapacity(began.count)
        for record in began {
            // One hash for a new id; an id seen before gets its first slot back.
            if let first = slots.updateValue(stallRecords.count, forKey: record.id) {
                slots[record.id] = first
            } else {
                stallRecords.append(record)
            }
        }
        // Each stall's `stallEnded` by slot (of several, the last counts).
        var ends = [TraceRecord.StallEnded?](repeating: nil, count: stallRecords.count)
        for record in ended { if let slot = slots[record.id] { ends[slot] = record } }
        let grouped = Self.group(samples, slots: slots, stalls: stallRecords.count)
        let (ordered, ranges, repeatedSamples) = Self.droppingRepeats(grouped.0, ranges: grouped.1)
        let orphans = grouped.2

        // Each stall's start and end as its records give them, by slot: the stalls are made in
        // start order straight away (sorting made stalls, with their slots beside them in tuples,
        // copied every one through the runtime's generic tuple copy).
        var times: [(start: UInt64, end: UInt64?)] = []
        times.reserveCapacity(stallRecords.count)
        for (slot, record) in stallRecords.enumerated() {
            var start = record.start
            var end: UInt64?
            if let ended = ends[slot] {
                end = ended.end
                // The executor's own timing of a stall that ended replaces the monitor's.
                if !retimed.isEmpty, let retimed = retimed[record.id] { (start, end) = (retimed.start, retimed.end) }
            }
            times.append((start, end))
        }
        var order = Array(stallRecords.indices)
        order.sort { (times[$0].start, stallRecords[$0].id) < (times[$1].start, stallRecords[$1].id) }

        // The stalls in that order, and each one's slot.
        var stalls: [Stall] = []
        stalls.reserveCapacity(stallRecords.count)
        var stallSlots: [Int] = []
        stallSlots.reserveCapacity(stallRecords.count)
        // Each call site and mode's callout identity once: a trace's stalls come from a few.
        var identities = CalloutIdentities()
        for slot in order {
            let record = stallRecords[slot]
            var timedOut = false
            for index in ranges[slot] where ordered[index].captureTimedOut { timedOut = true }
            let lastTime = ranges[slot].isEmpty ? nil : ordered[ranges[slot].upperBound - 1].time
            var flags: StallFlags = ends[slot]?.flags ?? [.unfinished]
            let (start, end) = times[slot]
            if timedOut { flags.insert(.captureTimedOut) }
            let reached = end ?? lastTime ?? start
            let elapsed = reached >= start ? reached - start : 0
            let tier = max(
                record.tier, thresholds.tier(for: .nanoseconds(Int64(clamping: elapsed))) ?? record.tier)
            let context = contexts.isEmpty ? nil : contexts[record.id]
            stalls.append(
                Stall(
                    id: record.id, start: start, end: end, tier: tier,
                    callout: identity(record, in: &identities), flags: flags,
                    expected: context?.expected, context: context.map { Self.dictionary($0.state) } ?? [:]))
            stallSlots.append(slot)
        }
        let budget = UInt64(clamping: thresholds.budget.nanoseconds)
        for index in stalls.indices where stalls[index].end == nil {
            let start = stalls[index].start
            let reachedTier = stalls[index].tier
            let range = ranges[stallSlots[index]]
            let lastSample = range.isEmpty ? start : max(start, ordered[range.upperBound - 1].time)
            // A later stall means this one's end record was lost: it is known to have run until
            // its last sample. Else it was still running when the trace ends.
            let laterStall = stalls[(index + 1)...].contains { $0.start > start }
            let end = laterStall ? lastSample : max(lastSample, start.saturatingAdding(budget), traceEnd ?? 0)
            stalls[index].end = end
            stalls[index].tier = max(
                reachedTier, thresholds.tier(for: .nanoseconds(Int64(clamping: end - start))) ?? reachedTier)
        }
        var onlyStopped = 0
        if !stopped.isEmpty {
            for index in stalls.indices {
                let start = stalls[index].start
                let span = start..<max(start, stalls[index].end ?? start)
                let within = stopped.compactMap { interval -> Range<UInt64>? in
                    let low = max(interval.lowerBound, span.lowerBound)
                    let high = min(interval.upperBound, span.upperBound)
                    return high > low ? low..<high : nil
                }
                guard !within.isEmpty else { continue }
                stalls[index].stopped = within
                let duration = StallAccounting.duration(stalls[index])
                if let tier = thresholds.tier(for: .nanoseconds(Int64(clamping: duration))) {
                    stalls[index].tier = tier
                } else {
                    stallSlots[index] = -1
                    onlyStopped += 1
                }
            }
            if onlyStopped > 0 {
                let kept = stalls.indices.filter { stallSlots[$0] >= 0 }
                stalls = kept.map { stalls[$0] }
                stallSlots = kept.map { stallSlots[$0] }
            }
        }

        var table = SampleTable(
            stacks: stackFrames, wchans: wchans.strings, annotations: annotations, sources: sources,
            counters: counters, waits: waits.mapValues { $0.fact(frame: symbolizer.frame) }, asyncEnds: asyncEnds)
        table.rows = ordered
        table.ranges = stallSlots.map { ranges[$0] }
        return (stalls, orphans, table, began.count - stallRecords.count, repeatedSamples, onlyStopped)
    }

    /// A context record's pairs as a dictionary (of a key given twice, the last counts).
    private static func dictionary(_ state: [TraceRecord.StallContext.KeyValue]) -> [String: String] {
        var values: [String: String] = [:]
        for pair in state { values[pair.key] = pair.value }
        return values
    }

    /// `samples` (each stall's in a row, in time order, `ranges` saying where) without the
    /// samples whose stall, index and time repeat the one before, the ranges that then hold, and
    /// how many were left out. A stall's samples have distinct indices, so a repeat is a repeated
    /// record (a sample whose index alone repeats another's was damaged, and is kept).
    private static func droppingRepeats(_ samples: [PendingSample], ranges: [Range<Int>])
        -> ([PendingSample], [Range<Int>], Int)
    {
        func repeats(_ index: Int) -> Bool {
            samples[index].index == samples[index - 1].index && samples[index].time == samples[index - 1].time
        }
        // A plain loop: every sample of every trace is looked at here.
        var anyRepeat = false
        search: for range in ranges where range.count > 1 {
            for index in (range.lowerBound + 1)..<range.upperBound where repeats(index) {
                anyRepeat = true
                break search
            }
        }
        guard anyRepeat else { return (samples, ranges, 0) }
        var kept: [PendingSample] = []
        kept.reserveCapacity(samples.count)
        var keptRanges = ranges
        // Samples of no stall lie outside every range and are dropped with the repeats.
        for (slot, range) in ranges.enumerated() {
            let start = kept.count
            for index in range where index == range.lowerBound || !repeats(index) { kept.append(samples[index]) }
            keptRanges[slot] = start..<kept.count
        }
        let inRanges = ranges.reduce(0) { $0 + $1.count }
        return (kept, keptRanges, inRanges - kept.count)
    }

    /// `samples` arranged so that each stall's are in a row in time order: the samples and
    /// each stall slot's range of them (`slots` numbers the stalls, `stalls` of them), and how
    /// many samples belong to no known stall (left out of every range).
    ///
    /// Traces write each stall's samples together and in time order; then the samples are
    /// used as read, nothing reordered or copied. Otherwise they are sorted into place.
    private static func group(_ samples: [PendingSample], slots: [UInt64: Int], stalls: Int)
        -> ([PendingSample], [Range<Int>], Int)
    {
        var ranges = [Range<Int>](repeating: 0..<0, count: stalls)
        var seen = [Bool](repeating: false, count: stalls)
        var orphans = 0
        var index = 0
        var inPlace = true
        while index < samples.count {
            let stall = samples[index].stall
            var end = index + 1
            while end < samples.count && samples[end].stall == stall {
                if !Self.inOrder(samples[end - 1], samples[end]) { inPlace = false }
                end += 1
            }
            if let slot = slots[stall] {
                if seen[slot] { inPlace = false }
                seen[slot] = true
                ranges[slot] = index..<end
            } else {
                orphans += end - index
            }
            if !inPlace { break }
            index = end
        }
        if inPlace { return (samples, ranges, orphans) }

        // Each stall's samples by a counting sort on the slot, in file order, then by time.
        var slotOf = [Int](repeating: -1, count: samples.count)
        var start = [Int](repeating: 0, count: stalls + 1)
        orphans = 0
        var last: (stall: UInt64, slot: Int?)?
        for (index, sample) in samples.enumerated() {
            let slot: Int?
            if let last, last.stall == sample.stall {
                slot = last.slot
            } else {
                slot = slots[sample.stall]
                last = (sample.stall, slot)
            }
            if let slot {
                slotOf[index] = slot
                start[slot + 1] += 1
            } else {
                orphans += 1
            }
        }
        for slot in 0..<stalls { start[slot + 1] += start[slot] }
        var order = [Int](repeating: 0, count: start[stalls])
        var next = start
        for (index, slot) in slotOf.enumerated() where slot >= 0 {
            order[next[slot]] = index
            next[slot] += 1
        }
        var ordered: [PendingSample] = []
        ordered.reserveCapacity(order.count)
        for slot in 0..<stalls {
            let members = order[start[slot]..<start[slot + 1]]
            if !zip(members, members.dropFirst()).allSatisfy({ Self.inOrder(samples[$0], samples[$1]) }) {
                order[start[slot]..<start[slot + 1]].sort {
                    (samples[$0].time, samples[$0].index) < (samples[$1].time, samples[$1].index)
                }
            }
            for member in order[start[slot]..<start[slot + 1]] { ordered.append(samples[member]) }
            ranges[slot] = start[slot]..<start[slot + 1]
        }
        return (ordered, ranges, orphans)
    }

    /// Whether `first` may come before `second` in their stall: by time, then (one look's samples
    /// may share a time) by index.
    private static func inOrder(_ first: PendingSample, _ second: PendingSample) -> Bool {
        (first.time, first.index) <= (second.time, second.index)
    }

    /// The identity of `record`'s callout, from `known` (identities made so far) or made and
    /// added to it.
    private func identity(_ record: TraceRecord.StallBegan, in known: inout CalloutIdentities) -> CalloutIdentity {
        for index in known.keys.indices
        where known.keys[index].site == record.site && known.keys[index].mode == record.mode {
            var identity = known.identities[index]
            identity.phase = record.phase
            return identity
        }
        let identity = identity(record)
        known.keys.append((record.site, record.mode))
        known.identities.append(identity)
        return identity
    }

    /// The callout identities made so far, by call site and mode (a trace's stalls come from a
    /// few: searched, not hashed). Keys and identities apart, so that looking a key up copies
    /// no identity.
    struct CalloutIdentities {
        var keys: [(site: UInt64, mode: UInt16)] = []
        var identities: [CalloutIdentity] = []
    }

    private func identity(_ record: TraceRecord.StallBegan) -> CalloutIdentity {
        let mode = modes[record.mode] ?? "mode \(record.mode)"
        guard let site = sites[record.site] else {
            return CalloutIdentity(
                kind: .post, label: "unknown call site \(record.site)", file: "?", line: 0, mode: mode,
                phase: record.phase)
        }
        return CalloutIdentity(
            kind: site.kind, label: site.label, file: site.file, line: site.line, mode: mode,
            phase: record.phase)
    }
}

/// A sample as read, before the stalls are joined: plain data, its stack and wait channel
/// by their numbers in the assembler's tables (`wchan` -1 for none).
package struct PendingSample: Sendable {
    package var stall: UInt64
    /// Its place among its stall's samples (`TraceRecord.Sample.index`).
    package var index: UInt32
    /// The thread sampled, 0 when not known.
    package var tid: Int32
    /// The look as the trace stores it: 0 for a look of its own, else the look number + 1.
    @usableFromInline var lookCode: UInt32
    package var time: UInt64
    package var cpuTime: UInt64
    /// The annotation's id, 0 for none.
    package var annotation: UInt64
    package var syscall: Int32?
    /// The number of the sample's stack in `SampleTable.stacks`.
    package var stack: Int32
    /// The number of the wait channel's name in the trace's table, -1 for none.
    package var wchan: Int32
    package var state: ThreadState
    package var captureTimedOut: Bool

    init(
        stall: UInt64, index: UInt32, tid: Int32, lookCode: UInt32, time: UInt64, cpuTime: UInt64, annotation: UInt64,
        syscall: Int32?, stack: Int, wchan: Int, state: ThreadState, captureTimedOut: Bool
    ) {
        self.stall = stall
        self.index = index
        self.tid = tid
        self.lookCode = lookCode
        self.time = time
        self.cpuTime = cpuTime
        self.annotation = annotation
        self.syscall = syscall
        self.stack = Int32(truncatingIfNeeded: stack)
        self.wchan = Int32(truncatingIfNeeded: wchan)
        self.state = state
        self.captureTimedOut = captureTimedOut
    }

    /// The look it shares with the stall's other samples of that number; nil for its own.
    /// Inlinable: a report reads it for every sample.
    @inlinable package var look: UInt32? { lookCode == 0 ? nil : lookCode - 1 }

    /// `look` as the trace stores it.
    static func lookCode(_ look: UInt32?) -> UInt32 { look.map { $0 &+ 1 } ?? 0 }
}

/// A trace's distinct wait channel names, numbered in the order first seen.
struct StringTable {
    private var numbers = KeyNumbers<String>()
    private var last: (bytes: [UInt8], number: Int)?

    /// The strings, by number.
    var strings: [String] { numbers.keys }

    /// The number of the UTF-8 string `bytes`; the same bytes as last time are not decoded again.
    mutating func number(of bytes: UnsafeRawBufferPointer) -> Int {
        if let last, last.bytes.withUnsafeBytes({ sameBytes($0, bytes) }) { return last.number }
        let number = self.number(of: String(decoding: bytes, as: UTF8.self))
        last = (Array(bytes), number)
        return number
    }

    mutating func number(of string: String) -> Int { numbers.number(of: string) }
}

/// A trace's distinct sample stacks (address lists), numbered in the order first seen.
struct StackTable {
    private var numbers = KeyNumbers<[UInt64]>()
    /// Room to decode one sample's addresses into.
    var scratch: [UInt64] = []
    /// The last stack decoded from bytes: its encoding (in the buffer being decoded, compared
    /// only while that decode runs), frame count and number.
    var lastEncoding: (bytes: UnsafeRawBufferPointer, count: Int, stack: Int)?

    /// The stacks, by number.
    var stacks: [[UInt64]] { numbers.keys }

    /// The number of `addresses`, adding it if it is new.
    mutating func number(of addresses: [UInt64]) -> Int { numbers.number(of: addresses) }

    /// What ends a stack's key whose frames from some index on are async: the marker, then that
    /// index. The marker is no user-space address (x86_64 user addresses stay below 2^47).
    static let asyncMarker = UInt64.max

    /// The number of `addresses` with its frames from `firstAsync` on async.
    mutating func number(of addresses: [UInt64], firstAsync: Int) -> Int {
        numbers.number(of: addresses + [Self.asyncMarker, UInt64(firstAsync)])
    }

    /// Whether a stack's key carries the async mark.
    static func hasAsyncMark(_ key: [UInt64]) -> Bool { key.count >= 2 && key[key.count - 2] == asyncMarker }

    /// The frames of a stack's key, named by `symbols`, the async ones marked.
    static func frames(_ key: [UInt64], _ symbols: FrameSymbols) -> [Frame] {
        guard hasAsyncMark(key) else { return key.map(symbols.frame) }
        let first = Int(clamping: key[key.count - 1])
        return key[..<(key.count - 2)].enumerated().map { index, address in
            var frame = symbols.frame(address)
            frame.isAsync = index >= first
            return frame
        }
    }
}

/// How a trace's addresses are named: by its `symbol` records and module map.
struct FrameSymbols: Sendable {
    var symbols: [UInt64: TraceRecord.Symbol]
    /// Each module's path by its index (a trace has a handful: searched, not hashed).
    var modulePaths: [(index: UInt32, path: String)]

    /// The frame at `address`, symbolicated when the trace names it.
    func frame(_ address: UInt64) -> Frame {
        // Made in one go (setting its fields one by one copied the frame in and out).
        guard let symbol = symbols[address] else { return Frame(address: address) }
        return Frame(
            address: address, symbol: symbol.name, module: modulePaths.first { $0.index == symbol.module }?.path,
            file: symbol.file, line: symbol.line)
    }
}
