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
    /// The header, if the trace has one (the last, if several).
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
    /// The stalls, by start time. A stall with no `stallEnded` record has the `unfinished`
    /// flag, no end, and the tier it had reached by its last sample.
    public var stalls: [Stall] = []
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
    /// Samples whose stall has no `stallBegan` record (lost to damage); left out of `stalls`.
    public var orphanSamples = 0
    /// How decoding went.
    public var outcome = TraceOutcome()

    /// Decodes `bytes` and assembles the result; `fileName` is only used in error messages.
    public init(decoding bytes: [UInt8], fileName: String? = nil) {
        self = bytes.withUnsafeBytes { DecodedTrace(decoding: $0, fileName: fileName) }
    }

    /// Decodes `bytes` and assembles the result; `fileName` is only used in error messages.
    public init(decoding bytes: UnsafeRawBufferPointer, fileName: String? = nil) {
        var assembler = StallAssembler()
        var parser = TraceParser(fileName: fileName)
        // Callouts, nearly every record of a full-mode trace, are only added up: straight here,
        // not through a closure and `add`'s switch (that made a serial decode ten times slower
        // than the split one, which counts them the same way).
        while let record = parser.next(in: bytes) {
            if case .callout(let callout) = record {
                add(callout)
            } else {
                add(record, to: &assembler)
            }
        }
        outcome = parser.outcome
        assemble(assembler)
    }

    /// Takes in one callout: the loop's busy time.
    mutating func add(_ callout: TraceRecord.Callout) {
        calloutCount += 1
        calloutNanos &+= callout.duration
        lastCalloutEnd = max(lastCalloutEnd, callout.start &+ callout.duration)
    }

    /// Takes in one record, in file order (the one place that says what each kind adds).
    mutating func add(_ record: TraceRecord, to assembler: inout StallAssembler) {
        switch record {
        case .header(let header): self.header = header
        case .platform(let platform): architecture = platform.architecture
        case .origin(let origin): self.origin = origin
        case .module(let module): modules.append(module)
        case .callout(let callout): add(callout)
        case .congestion(let record): congestion.append(record)
        case .congestedIteration(let record): congestedIterations.append(record)
        case .frameClock(let record): frameClock.append(record)
        case .latencyHistogram(let record): latencyHistograms.append(record)
        case .lostRecords(let record): lostRecords &+= record.count
        default: assembler.add(record)
        }
    }

    /// Joins the stall records once every record is in.
    mutating func assemble(_ assembler: StallAssembler) {
        callSites = assembler.sites
        let thresholds = header?.thresholds ?? .default
        (stalls, orphanSamples) = assembler.stalls(modules: modules, thresholds: thresholds)
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
    var ended: [UInt64: TraceRecord.StallEnded] = [:]
    var samples: [UInt64: [TraceRecord.Sample]] = [:]
    var sources: [SampleKey: SampleSource] = [:]
    /// Kinds 18 and 19, by stall and sample time.
    var counters: [SampleKey: TraceRecord.SampleCounters] = [:]
    var waits: [SampleKey: TraceRecord.SampleWait] = [:]

    struct SampleKey: Hashable {
        var stall: UInt64
        var time: UInt64
    }

    mutating func add(_ record: TraceRecord) {
        switch record {
        case .callSite(let site): sites[site.id] = site
        case .modeName(let mode): modes[mode.id] = mode.name
        case .annotation(let definition): annotations[definition.id] = definition.annotation
        case .symbol(let symbol): symbols[symbol.address] = symbol
        case .stallBegan(let record): began.append(record)
        case .stallEnded(let record): ended[record.id] = record
        case .sample(let sample): samples[sample.stall, default: []].append(sample)
        case .sampleProvenance(let record): sources[SampleKey(stall: record.stall, time: record.time)] = record.source
        case .sampleCounters(let record): counters[SampleKey(stall: record.stall, time: record.time)] = record
        case .sampleWait(let record): waits[SampleKey(stall: record.stall, time: record.time)] = record
        default: break
        }
    }

    func stalls(modules: [TraceRecord.Module], thresholds: TierThresholds) -> ([Stall], Int) {
        var modulePaths: [UInt32: String] = [:]
        for module in modules { modulePaths[module.index] = module.path }
        var frames: [UInt64: Frame] = [:]
        func frame(_ address: UInt64) -> Frame {
            if let known = frames[address] { return known }
            var frame = Frame(address: address)
            if let symbol = symbols[address] {
                frame.symbol = symbol.name
                frame.module = modulePaths[symbol.module]
                frame.file = symbol.file
                frame.line = symbol.line
            }
            frames[address] = frame
            return frame
        }
        // Within a trace a stall's samples mostly repeat a few stacks: each distinct address
        // list becomes one `[Frame]` that its samples share, instead of a copy per sample (a
        // fleet report held every sample at once, and copying frames was most of its memory).
        var stacks: [[UInt64]: [Frame]] = [:]
        // Samples in a row mostly repeat their stack: comparing with the last one is cheaper
        // than hashing (a fleet report hashed every sample's addresses here).
        var last: (addresses: [UInt64], frames: [Frame]) = ([], [])
        func stack(_ addresses: [UInt64]) -> [Frame] {
            if addresses == last.addresses { return last.frames }
            let frames: [Frame]
            if let known = stacks[addresses] {
                frames = known
            } else {
                frames = addresses.map(frame)
                stacks[addresses] = frames
            }
            last = (addresses, frames)
            return frames
        }

        var result: [Stall] = []
        var used = Set<UInt64>()
        for record in began where used.insert(record.id).inserted {
            let samples = (self.samples[record.id] ?? []).sorted { $0.time < $1.time }.map {
                let key = SampleKey(stall: record.id, time: $0.time)
                return Sample(
                    time: $0.time, frames: stack($0.frames), state: $0.state, syscall: $0.syscall,
                    wchan: $0.wchan, cpuTimeNanos: $0.cpuTime,
                    annotation: $0.annotation == 0 ? nil : annotations[$0.annotation],
                    captureTimedOut: $0.captureTimedOut, source: sources[key], counters: counters[key]?.counters,
                    countersDelta: counters[key]?.delta, wait: waits[key]?.fact(frame: frame))
            }
            var flags: StallFlags = [.unfinished]
            var end: UInt64?
            if let ended = ended[record.id] {
                flags = ended.flags
                end = ended.end
            }
            if samples.contains(where: \.captureTimedOut) { flags.insert(.captureTimedOut) }
            let reached = end ?? samples.last?.time ?? record.start
            let elapsed = reached >= record.start ? reached - record.start : 0
            let tier = max(
                record.tier, thresholds.tier(for: .nanoseconds(Int64(clamping: elapsed))) ?? record.tier)
            result.append(
                Stall(
                    id: record.id, start: record.start, end: end, tier: tier,
                    callout: identity(record), samples: samples, flags: flags))
        }
        result.sort { ($0.start, $0.id) < ($1.start, $1.id) }
        let orphans = samples.reduce(0) { $0 + (used.contains($1.key) ? 0 : $1.value.count) }
        return (result, orphans)
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
