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
    stall.flags.contains(.unfinished) ? "[unfinished stall, no samples]" : "[no samples]"
}

extension LoadedTrace {
    /// The last timestamp in the trace (`CLOCK_MONOTONIC` nanoseconds): where the run time of
    /// `report` ends, worked out from the trace's records as `report` reads them; the end the
    /// decoder gives the last unfinished stall must reach it (the Chrome tests check the two
    /// against each other).
    package var lastTimestamp: UInt64 {
        let run = ReportBuilder.wallRunTime(of: self)
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

extension AnalyzedStall {
    /// Where the exports draw the stall's end: its end, which for an unfinished stall the
    /// decoder set to the last time the trace says it ran (`DecodedTrace`), so every output
    /// draws it as long as `report` counts it.
    var drawnEnd: UInt64 { max(stall.end ?? stall.start, stall.start) }
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
        let unfinished = empty.filter { $0.stall.flags.contains(.unfinished) }.count
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
