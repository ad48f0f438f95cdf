import StallwatchCore

/// A sample's stack, outermost frame first, with the sample's category as the root frame;
/// `names` are its frames' names, innermost first (`AnalyzedStall.frameNames(ofSample:)`). A
/// sample without a backtrace gets a placeholder leaf so its time still shows.
func rootedStack(_ sample: Sample, category: StallCategory, names: [String]) -> [String] {
    [category.rawValue] + (sample.frames.isEmpty ? [missingStackName(sample)] : names.reversed())
}

/// What makes two samples' stacks one in an output (a folded line, a flame-graph path, a
/// speedscope stack, a Chrome `stackFrames` entry): their trace's stacks (`StackNames`), the
/// stack's number there (-1 without frames, and then why it has none), and the root category
/// where the output roots stacks at one. Hashing it costs the same however long the names.
struct SampleStackKey: Hashable {
    var names: ObjectIdentifier
    var stack: Int32
    var timedOut: Bool
    var category: StallCategory?

    /// The key of sample `index` of `analyzed`, rooted at `category` if given.
    init(_ analyzed: AnalyzedStall, sample index: Int, category: StallCategory?) {
        let sample = analyzed.stall.samples[index]
        names = ObjectIdentifier(analyzed.stackNames)
        stack = sample.frames.isEmpty ? -1 : analyzed.stackNumbers[index]
        timedOut = sample.frames.isEmpty && sample.captureTimedOut
        self.category = category
    }
}

/// The placeholder frame of a sample without a backtrace.
func missingStackName(_ sample: Sample) -> String {
    sample.captureTimedOut ? "[capture timed out]" : "[no stack]"
}

/// The one frame that stands for a stall without samples in the flame-graph exports (its time
/// is real but no stack says where it went).
func noSamplesName(_ stall: Stall) -> String {
    stall.end == nil ? "[unfinished stall, no samples]" : "[no samples]"
}

extension LoadedTrace {
    /// The last timestamp in the trace (`CLOCK_MONOTONIC` nanoseconds): where the run time of
    /// `report` ends, and how far the exports draw a stall that never ended.
    package var lastTimestamp: UInt64 {
        let run = ReportBuilder.runTime(of: self)
        if let base = trace.header?.clockBase { return base &+ run }
        // Without a header the run is measured from the first timestamp; the stalls and
        // callouts hold the last one.
        var last = trace.lastCalloutEnd
        for (index, stall) in trace.bareStalls.enumerated() {
            last = max(last, stall.end ?? stall.start, trace.lastSampleTime(ofStall: index) ?? 0)
        }
        return last
    }
}

/// Where the exports draw each stall's end. A stall that ended, at its end. An unfinished one
/// (a hang the app was killed in: no end record) reaches the trace's last timestamp, but not
/// past the start of the trace's next stall (one loop has one stall at a time, so the next
/// one means this one's end record was lost), and never less than its last sample or its
/// budget (the watchdog saw it running at start + budget).
///
/// A plain value; use it on any thread.
struct StallExtents {
    private var ends: [StallKey: UInt64] = [:]

    private struct StallKey: Hashable {
        var trace: String
        var id: UInt64
        var start: UInt64
    }

    /// The extents of `stalls`; `traces` give each trace's last timestamp (by path). A stall
    /// whose trace is not among them reaches its last sample or its budget.
    init(_ stalls: [AnalyzedStall], traces: [LoadedTrace]) {
        var lastTimestamps: [String: UInt64] = [:]
        for trace in traces { lastTimestamps[trace.path] = max(lastTimestamps[trace.path] ?? 0, trace.lastTimestamp) }
        var byTrace: [String: [AnalyzedStall]] = [:]
        for analyzed in stalls { byTrace[analyzed.tracePath, default: []].append(analyzed) }
        for (path, group) in byTrace {
            let ordered = group.sorted { ($0.stall.start, $0.stall.id) < ($1.stall.start, $1.stall.id) }
            for (position, analyzed) in ordered.enumerated() {
                let stall = analyzed.stall
                var end: UInt64
                if let recorded = stall.end {
                    end = max(recorded, stall.start)
                } else {
                    let seen = max(stall.samples.last?.time ?? stall.start, stall.start &+ analyzed.budgetNanos)
                    let next = ordered[(position + 1)...].first { $0.stall.start > stall.start }?.stall.start
                    let reach = min(lastTimestamps[path] ?? 0, next ?? .max)
                    end = max(seen, reach)
                    if let next, end > next { end = max(next, stall.samples.last?.time ?? stall.start) }
                }
                ends[StallKey(trace: path, id: stall.id, start: stall.start)] = end
            }
        }
    }

    /// Where `analyzed` is drawn to end (nanoseconds).
    func end(of analyzed: AnalyzedStall) -> UInt64 {
        ends[StallKey(trace: analyzed.tracePath, id: analyzed.stall.id, start: analyzed.stall.start)]
            ?? max(analyzed.stall.end ?? analyzed.stall.start, analyzed.stall.start)
    }
}

/// The lines `stallwatch export` adds on stderr about what the export could not show as
/// sampled stacks.
package enum ExportNotes {
    /// `N of M stalls carried no samples (…)` when some stall has no sample, else `nil`: a
    /// flame graph without them would hide their time, so each is drawn as one marker frame
    /// (`[no samples]`, `[unfinished stall, no samples]`); the Chrome export draws their slices
    /// without sample markers.
    package static func stallsWithoutSamples(_ stalls: [AnalyzedStall], chrome: Bool = false) -> String? {
        let empty = stalls.filter { $0.stall.samples.isEmpty }
        guard !empty.isEmpty else { return nil }
        let unfinished = empty.filter { $0.stall.end == nil }.count
        let counted =
            "\(empty.count) of \(stalls.count) \(stalls.count == 1 ? "stall" : "stalls") carried no samples"
            + (unfinished > 0 ? " (\(unfinished) unfinished)" : "")
        return counted
            + (chrome
                ? "; their slices have no sample marks"
                : "; each is drawn as one marker frame")
    }
}

/// The nanoseconds each sample of `stall` stands for: `StallAccounting`'s rule, the one the
/// report's totals and breakdowns follow (`AnalyzedStall.sampleWeights` holds the same).
func sampleWeights(_ stall: Stall) -> [UInt64] {
    StallAccounting.sampleWeights(stall)
}
