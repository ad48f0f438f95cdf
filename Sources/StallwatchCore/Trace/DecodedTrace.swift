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
        // Samples, most records of a fleet's traces, go straight into the assembler.
        while true {
            while parser.takeSample(in: bytes, into: &assembler) {}
            guard let record = parser.next(in: bytes) else { break }
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
    /// The samples in file order, their stacks and wait channels by number.
    var samples: [PendingSample] = []
    var stacks = StackTable()
    var wchans = StringTable()
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
        case .sample(let sample):
            samples.append(
                PendingSample(
                    stall: sample.stall, time: sample.time, cpuTime: sample.cpuTime, annotation: sample.annotation,
                    syscall: sample.syscall, stack: stacks.number(of: sample.frames),
                    wchan: sample.wchan.map { wchans.number(of: $0) } ?? -1, state: sample.state,
                    captureTimedOut: sample.captureTimedOut))
        case .sampleProvenance(let record): sources[SampleKey(stall: record.stall, time: record.time)] = record.source
        case .sampleCounters(let record): counters[SampleKey(stall: record.stall, time: record.time)] = record
        case .sampleWait(let record): waits[SampleKey(stall: record.stall, time: record.time)] = record
        default: break
        }
    }

    /// Takes in the sample record whose payload `reader` holds, all of it or (on a throw) nothing.
    /// A sample whose encoded frames are the same bytes as the last one's gets its stack without
    /// decoding them: samples in a row mostly repeat their stack.
    mutating func takeSample(_ reader: inout TraceByteReader) throws(TraceFieldError) {
        var (sample, wchan) = try TraceParser.parseSampleFields(&reader)
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
        // Each distinct address list becomes one `[Frame]` that its samples share, instead of a
        // copy per sample (a fleet report held every sample at once, and copying frames was most
        // of its memory).
        let stackFrames = stacks.stacks.map { $0.map(frame) }

        // Each stall's samples, by the first `stallBegan` of its id (a later one is ignored).
        var slots: [UInt64: Int] = [:]
        var stallRecords: [TraceRecord.StallBegan] = []
        for record in began where slots[record.id] == nil {
            slots[record.id] = stallRecords.count
            stallRecords.append(record)
        }
        // Samples by stall: each stall's run of `order`, `start[slot]..<start[slot + 1]`, in file
        // order (one array for all, counted first).
        var slotOf = [Int](repeating: -1, count: samples.count)
        var start = [Int](repeating: 0, count: stallRecords.count + 1)
        var orphans = 0
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
        for slot in stallRecords.indices { start[slot + 1] += start[slot] }
        var order = [Int](repeating: 0, count: start[stallRecords.count])
        var next = start
        for (index, slot) in slotOf.enumerated() where slot >= 0 {
            order[next[slot]] = index
            next[slot] += 1
        }

        var result: [Stall] = []
        result.reserveCapacity(stallRecords.count)
        let taken = self.samples
        for (slot, record) in stallRecords.enumerated() {
            var members = order[start[slot]..<start[slot + 1]]
            if !zip(members, members.dropFirst()).allSatisfy({ taken[$0].time <= taken[$1].time }) {
                members.sort { taken[$0].time < taken[$1].time }
            }
            var samples: [Sample] = []
            samples.reserveCapacity(members.count)
            // Read off the plain records: asking the built samples (`contains(where:)`,
            // `last`) copied each one.
            var timedOut = false
            var lastTime: UInt64?
            for index in members {
                let sample = taken[index]
                timedOut = timedOut || sample.captureTimedOut
                lastTime = sample.time
                let key = SampleKey(stall: record.id, time: sample.time)
                let counted = counters.isEmpty ? nil : counters[key]
                samples.append(
                    Sample(
                        time: sample.time, frames: stackFrames[Int(sample.stack)], state: sample.state,
                        syscall: sample.syscall, wchan: sample.wchan < 0 ? nil : wchans.strings[Int(sample.wchan)],
                        cpuTimeNanos: sample.cpuTime,
                        annotation: sample.annotation == 0 ? nil : annotations[sample.annotation],
                        captureTimedOut: sample.captureTimedOut, source: sources.isEmpty ? nil : sources[key],
                        counters: counted?.counters, countersDelta: counted?.delta,
                        wait: waits.isEmpty ? nil : waits[key]?.fact(frame: frame)))
            }
            var flags: StallFlags = [.unfinished]
            var end: UInt64?
            if let ended = ended[record.id] {
                flags = ended.flags
                end = ended.end
            }
            if timedOut { flags.insert(.captureTimedOut) }
            let reached = end ?? lastTime ?? record.start
            let elapsed = reached >= record.start ? reached - record.start : 0
            let tier = max(
                record.tier, thresholds.tier(for: .nanoseconds(Int64(clamping: elapsed))) ?? record.tier)
            result.append(
                Stall(
                    id: record.id, start: record.start, end: end, tier: tier,
                    callout: identity(record), samples: samples, flags: flags))
        }
        result.sort { ($0.start, $0.id) < ($1.start, $1.id) }
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

/// A sample as read, before the stalls are joined: plain data, its stack and wait channel
/// by their numbers in the assembler's tables (`wchan` -1 for none).
struct PendingSample {
    var stall: UInt64
    var time: UInt64
    var cpuTime: UInt64
    var annotation: UInt64
    var syscall: Int32?
    var stack: Int32
    var wchan: Int32
    var state: ThreadState
    var captureTimedOut: Bool

    init(
        stall: UInt64, time: UInt64, cpuTime: UInt64, annotation: UInt64, syscall: Int32?, stack: Int, wchan: Int,
        state: ThreadState, captureTimedOut: Bool
    ) {
        self.stall = stall
        self.time = time
        self.cpuTime = cpuTime
        self.annotation = annotation
        self.syscall = syscall
        self.stack = Int32(truncatingIfNeeded: stack)
        self.wchan = Int32(truncatingIfNeeded: wchan)
        self.state = state
        self.captureTimedOut = captureTimedOut
    }
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
}
