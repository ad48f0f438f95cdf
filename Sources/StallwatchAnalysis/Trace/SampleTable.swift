import StallwatchCore

/// A trace's samples as the decoder read them: one row per sample, its fields plain, its stack
/// and wait channel by number; each stall's rows in a row (`ranges`). An analysis reads the rows
/// as they are; `sample(_:stall:)` builds a `Sample` when one is wanted (`show`, the exports).
///
/// A plain value; use it on any thread.
package struct SampleTable: Sendable {
    /// The distinct stacks, symbolicated, by number (`PendingSample.stack`).
    package var stacks: [[Frame]] = []
    /// The rows: each stall's in a row, in time order (samples of no known stall in none).
    package var rows: [PendingSample] = []
    /// Stall `i`'s rows are `rows[ranges[i]]`.
    package var ranges: [Range<Int>] = []
    var wchans: [String] = []
    var annotations: [UInt64: Annotation] = [:]
    var sources: [StallAssembler.SampleKey: SampleSource] = [:]
    var counters: [StallAssembler.SampleKey: TraceRecord.SampleCounters] = [:]
    var waits: [StallAssembler.SampleKey: WaitFact] = [:]
    var asyncEnds: [StallAssembler.SampleKey: AsyncChainEnd] = [:]
    /// Whether any row has kernel facts (counters or a wait): when not,
    /// `hasKernelFacts(_:stall:)` is false for every one.
    package private(set) var anyKernelFacts = false

    /// An empty table.
    package init() {}

    init(
        stacks: [[Frame]], wchans: [String], annotations: [UInt64: Annotation],
        sources: [StallAssembler.SampleKey: SampleSource],
        counters: [StallAssembler.SampleKey: TraceRecord.SampleCounters],
        waits: [StallAssembler.SampleKey: WaitFact], asyncEnds: [StallAssembler.SampleKey: AsyncChainEnd] = [:]
    ) {
        self.asyncEnds = asyncEnds
        self.stacks = stacks
        self.wchans = wchans
        self.annotations = annotations
        self.sources = sources
        self.counters = counters
        self.waits = waits
        anyKernelFacts = !counters.isEmpty || !waits.isEmpty
    }

    /// The table of `stall`'s samples alone (a stall built in code, not decoded): its rows are
    /// `ranges[0]`, and `sample(_:stall:)` of each gives the sample back. Samples are told
    /// apart by their index in the stall, as in a trace.
    package init(_ stall: Stall) {
        var stackNumbers = KeyNumbers<[Frame]>()
        var wchanNumbers = KeyNumbers<String>()
        var annotationIDs: [Annotation: UInt64] = [:]
        for (index, sample) in stall.samples.enumerated() {
            let key = StallAssembler.SampleKey(stall: stall.id, sample: UInt64(index))
            var annotation: UInt64 = 0
            if let known = sample.annotation {
                annotation = annotationIDs[known] ?? UInt64(annotationIDs.count + 1)
                annotationIDs[known] = annotation
                annotations[annotation] = known
            }
            sources[key] = sample.source
            if let reading = sample.counters {
                counters[key] = TraceRecord.SampleCounters(
                    stall: stall.id, sample: UInt64(index), counters: reading, delta: sample.countersDelta)
            }
            if let wait = sample.wait { waits[key] = wait }
            if let end = sample.asyncChainEnd { asyncEnds[key] = end }
            rows.append(
                PendingSample(
                    stall: stall.id, index: UInt32(truncatingIfNeeded: index), tid: sample.tid,
                    lookCode: PendingSample.lookCode(sample.look), time: sample.time, cpuTime: sample.cpuTimeNanos,
                    annotation: annotation, syscall: sample.syscall, stack: stackNumbers.number(of: sample.frames),
                    wchan: sample.wchan.map { wchanNumbers.number(of: $0) } ?? -1, state: sample.state,
                    captureTimedOut: sample.captureTimedOut))
        }
        stacks = stackNumbers.keys
        wchans = wchanNumbers.keys
        ranges = [0..<rows.count]
        anyKernelFacts = !counters.isEmpty || !waits.isEmpty
    }

    /// Whether row `index` (of stall id `stall`) has kernel facts (counters or a wait): what
    /// `input(_:stall:)` reads beyond the row's plain fields.
    package func hasKernelFacts(_ index: Int, stall: UInt64) -> Bool {
        guard anyKernelFacts else { return false }
        let key = key(index, stall: stall)
        return counters[key] != nil || waits[key] != nil
    }

    /// What row `index` (of stall id `stall`) waited on, if the trace says.
    package func wait(_ index: Int, stall: UInt64) -> WaitFact? {
        waits.isEmpty ? nil : waits[key(index, stall: stall)]
    }

    /// The growth of the thread's kernel counters at row `index` (of stall id `stall`), if read.
    package func countersDelta(_ index: Int, stall: UInt64) -> KernelCounters? {
        counters.isEmpty ? nil : counters[key(index, stall: stall)]?.delta
    }

    /// The frames of row `index`'s stack.
    package func frames(_ index: Int) -> [Frame] { stacks[Int(rows[index].stack)] }

    /// The wait channel of row `index`, if any.
    package func wchan(_ index: Int) -> String? { rows[index].wchan < 0 ? nil : wchans[Int(rows[index].wchan)] }

    /// The annotation of row `index`, if any.
    package func annotation(_ index: Int) -> Annotation? {
        rows[index].annotation == 0 ? nil : annotations[rows[index].annotation]
    }

    /// What the classifier reads of row `index` (of stall id `stall`).
    package func input(_ index: Int, stall: UInt64) -> ClassifierInput {
        let row = rows[index]
        return ClassifierInput(
            frames: frames(index), state: row.state, syscall: row.syscall, wchan: wchan(index),
            annotation: annotation(index), wait: wait(index, stall: stall),
            countersDelta: countersDelta(index, stall: stall))
    }

    /// Row `index` (of stall id `stall`) built into a `Sample`.
    package func sample(_ index: Int, stall: UInt64) -> Sample {
        let row = rows[index]
        let key = key(index, stall: stall)
        let counted = counters.isEmpty ? nil : counters[key]
        return Sample(
            time: row.time, frames: frames(index), state: row.state, syscall: row.syscall, wchan: wchan(index),
            cpuTimeNanos: row.cpuTime, annotation: annotation(index), captureTimedOut: row.captureTimedOut,
            source: sources.isEmpty ? nil : sources[key], asyncChainEnd: asyncEnds.isEmpty ? nil : asyncEnds[key],
            counters: counted?.counters, countersDelta: counted?.delta,
            wait: waits.isEmpty ? nil : waits[key], tid: row.tid, look: row.look)
    }

    /// How the records about row `index` (of stall id `stall`) name it.
    private func key(_ index: Int, stall: UInt64) -> StallAssembler.SampleKey {
        StallAssembler.SampleKey(stall: stall, sample: UInt64(rows[index].index))
    }

    /// Stall `slot`'s samples (its id is `stall`) built, in time order.
    package func samples(of slot: Int, stall: UInt64) -> [Sample] {
        var result: [Sample] = []
        result.reserveCapacity(ranges[slot].count)
        for index in ranges[slot] { result.append(sample(index, stall: stall)) }
        return result
    }

    /// The time of stall `slot`'s last sample, nil without samples.
    package func lastTime(of slot: Int) -> UInt64? {
        let range = ranges[slot]
        return range.isEmpty ? nil : rows[range.upperBound - 1].time
    }
}
