@_spi(StallwatchPackage) import StallwatchAnalysis
import StallwatchCore

/// What stalls are grouped by: the dominant category and the innermost app frames (frames
/// whose module is not the system's, `Frame.isSystem`, and that are not compiler-generated
/// thunks), innermost first. Two stalls with equal keys are "the same stall" in a report.
///
/// A plain value; use it on any thread.
package struct SignatureKey: Sendable, Hashable, Comparable, Codable {
    /// How many app frames a signature keeps.
    static let frameCount = 3

    /// The stall's dominant category (`other` when it has no samples).
    package var category: StallCategory
    /// Up to three app frame names, innermost first. When no sample has an app frame, the
    /// dominant reason in brackets (`[fsync]`); `[no samples]` when there are none.
    package var frames: [String]

    init(category: StallCategory, frames: [String]) {
        self.category = category
        self.frames = frames
    }

    /// The key as one line: `compute: App.parse ← App.load`.
    package var text: String {
        "\(category.rawValue): " + frames.joined(separator: " ← ")
    }

    /// Orders by category name, then frames, so listings are stable.
    package static func < (lhs: SignatureKey, rhs: SignatureKey) -> Bool {
        (lhs.category.rawValue, lhs.frames.joined(separator: "\u{0}"))
            < (rhs.category.rawValue, rhs.frames.joined(separator: "\u{0}"))
    }
}

/// One stall with the classifier's verdict on each sample, its breakdown, its representative
/// stack and its signature: what `ReportBuilder.analyze(_:)` returns and the exporters,
/// `StallText` and `StallListText` take.
///
/// A plain value; use it on any thread.
package struct AnalyzedStall: Sendable {
    /// The path of the trace the stall was read from.
    package var tracePath: String
    /// The stall as decoded, samples in time order.
    package var stall: Stall
    /// The classifier's verdict on each sample (`classifications[i]` is `stall.samples[i]`'s).
    package var classifications: [Classification]
    /// The nanoseconds each sample stands for (`StallAccounting.sampleWeights`): what the
    /// breakdown weighs and the exports draw, adding up to `durationNanos` when there are
    /// samples.
    package var sampleWeights: [UInt64]
    /// The time-weighted breakdown of the samples by category and reason.
    package var breakdown: StallBreakdown
    /// The category with the largest share of the breakdown (`other` when there are no
    /// samples).
    package var category: StallCategory
    /// What the stall is grouped by in a report.
    package var key: SignatureKey
    /// The stack that stands for the stall, with its confidence; `nil` when no sample of the
    /// dominant category has a stack.
    package var representative: RepresentativeStack?
    /// How long the stall lasted, in nanoseconds; for an unfinished stall, until its last
    /// sample.
    package var durationNanos: UInt64
    /// The frame budget of the stall's trace, in nanoseconds.
    package var budgetNanos: UInt64
    /// How the frames of the stall's trace are named.
    package var names: FrameNamer
    /// Each sample's stack by its number in its trace's sample table (`stackNames` names it).
    package var stackNumbers: [Int32]
    /// The names of the stacks of the stall's trace, shared by its stalls.
    package var stackNames: StackNames
    /// What the loop ran just before the stall, when its trace has the flight recorder's
    /// record of it (read by `init(slot:of:classifier:)`, which `show` uses).
    package var leadUp: LeadUp?

    /// The index of the representative stack's sample, `nil` without one.
    package var representativeSample: Int? { representative?.sample }

    /// The representative sample's frames, innermost first (empty without one).
    package var representativeFrames: [Frame] {
        representative.map { stall.samples[$0.sample].frames } ?? []
    }

    /// `frameName(_:)` of each of `representativeFrames` (`frameNames(ofSample:)`).
    package var representativeNames: [String] {
        representative.map { frameNames(ofSample: $0.sample) } ?? []
    }

    /// The time beyond the budget, in nanoseconds: what the hitch ratio adds up.
    package var overrunNanos: UInt64 { durationNanos > budgetNanos ? durationNanos - budgetNanos : 0 }

    /// The part of the duration no sample stands for: all of it for a stall without samples,
    /// else 0.
    package var unsampledNanos: UInt64 {
        let weighed = sampleWeights.reduce(0, +)
        return durationNanos > weighed ? durationNanos - weighed : 0
    }

    /// Classifies `stall`'s samples (a stall built in code, not decoded) with `classifier`,
    /// weighs them, picks the representative stack and the signature; `tracePath`, `budget`
    /// and `names` (from the trace's module map) are kept for reports. Pure; any thread.
    package init(
        _ stall: Stall, tracePath: String, budget: Duration, classifier: Classifier,
        names: FrameNamer = FrameNamer(modules: [])
    ) {
        let table = SampleTable(stall)
        var state = TableReading(table)
        self.init(
            slot: 0, of: table, stall: stall, tracePath: tracePath, budget: budget, classifier: classifier,
            names: names, memo: AppFrameMemo(), state: &state)
    }

    /// Stall `slot` of `loaded`, analyzed with its header's budget and its module map's names.
    package init(slot: Int, of loaded: LoadedTrace, classifier: Classifier) {
        var state = TableReading(loaded.trace.table)
        self.init(
            slot: slot, of: loaded.trace.table, stall: loaded.trace.bareStalls[slot], tracePath: loaded.path,
            budget: loaded.trace.header?.thresholds.budget ?? TierThresholds.default.budget, classifier: classifier,
            names: FrameNamer(modules: loaded.trace.modules), memo: AppFrameMemo(), state: &state)
        leadUp = loaded.trace.leadUps[stall.id].map { LeadUp($0, callSites: loaded.trace.callSites) }
    }

    /// `stall`, whose samples are rows `table.ranges[slot]`, read once (`AppFrameMemo.read`)
    /// with `memo` and `state` (one of each per table, used by one thread at a time), its
    /// samples built; `stackNames` names the table's stacks (made for this stall alone when
    /// not given).
    init(
        slot: Int, of table: SampleTable, stall: Stall, tracePath: String, budget: Duration,
        classifier: Classifier, names: FrameNamer, memo: AppFrameMemo, state: inout TableReading,
        stackNames: StackNames? = nil
    ) {
        let reading = memo.read(
            stall, slot: slot, of: table, classifier: classifier, names: TraceNames(names), perRow: true,
            state: &state)
        self.tracePath = tracePath
        self.stall = stall
        self.stall.samples = table.samples(of: slot, stall: stall.id)
        self.names = names
        stackNumbers = table.rows[table.ranges[slot]].map(\.stack)
        self.stackNames = stackNames ?? StackNames(table, namer: names)
        budgetNanos = budget.nanoseconds
        classifications = reading.verdicts.map { memo.verdicts[$0] }
        sampleWeights = reading.weights
        breakdown = reading.analysis.breakdown
        category = reading.analysis.category
        durationNanos = reading.durationNanos
        representative = reading.analysis.representative
        key = reading.analysis.key
    }

    /// Where the stalled work was registered, `#fileID:#line` (`StallSite`).
    package var site: String {
        let site = StallSite(stall.callout, frames: representativeFrames)
        return "\(site.file):\(site.line)"
    }

    /// How `frame` (one of this stall's) is named in text and exports.
    package func frameName(_ frame: Frame) -> String { names.name(frame) }

    /// `frameName(_:)` of each frame of sample `index`, innermost first: named once per
    /// distinct stack of the trace (`StackNames`), however many samples have it.
    package func frameNames(ofSample index: Int) -> [String] {
        stall.samples[index].frames.isEmpty ? [] : stackNames.names(ofStack: stackNumbers[index])
    }
}

/// What the analysis of the stalls of one sample table (a trace's) worked out for them
/// (`read`): each address's app-frame name (nil: not an app frame), each distinct row's
/// verdict (numbered), each distinct stack. One thread at a time.
final class AppFrameMemo {
    var names: [UInt64: String?] = [:]
    /// The verdicts by number (`SampleRun.verdict`).
    private(set) var verdicts: [Classification] = []
    let stacks: StackMemo
    /// What holds in every trace, kept across the traces one worker analyzes (each trace has
    /// its own addresses, but a fleet's traces share their functions).
    let portable: PortableMemo

    init(portable: PortableMemo = PortableMemo()) {
        self.portable = portable
        stacks = StackMemo(portable: portable)
    }

    /// Numbers `classifier`'s verdict on row `index` of `table` (of stall id `stall`), whose
    /// stack is `stack` in `stacks` (-1 when it has no frames).
    func addVerdict(row index: Int, stall: UInt64, of table: SampleTable, stack: Int, _ classifier: Classifier) -> Int {
        let portableStack = stack < 0 ? portable.stack([]) : stacks.portableNumber(ofStack: stack)
        verdicts.append(portable.verdict(table.input(index, stall: stall), stack: portableStack, classifier))
        return verdicts.count - 1
    }

    /// The app frames of stack `number` (innermost first, at most `SignatureKey.frameCount`):
    /// frames whose module is not the system's and that are not compiler-generated, named by
    /// `names`, a name repeated in a row once. Worked out once per portable stack and worker
    /// when every frame has a symbol (then the names depend on the symbols alone); else once
    /// per stack and trace, each address judged and named once: the module tests are string
    /// searches and naming simplifies symbols, both too slow to repeat per sample.
    func appFrames(ofStack number: Int, names namer: TraceNames) -> [String] {
        stacks.appFrames(ofStack: number) { frames in
            var result: [String] = []
            for frame in frames {
                let name: String?
                if let known = names[frame.address] {
                    name = known
                } else {
                    name = !frame.isSystem && !isCompilerGenerated(frame) ? portable.name(frame, namer) : nil
                    names[frame.address] = .some(name)
                }
                // A forwarder and the function it stands for, both on the stack, are one step.
                guard let name, result.last != name else { continue }
                result.append(name)
                if result.count == SignatureKey.frameCount { break }
            }
            return result
        }
    }
}

/// What one worker learns from the traces it analyzes that holds in every trace (each trace
/// has its own addresses, but a fleet's traces share their functions):
/// - `FrameNamer.name(_:)` of symbolicated frames by symbol: that name depends on the symbol
///   alone (`SwiftNames.simplify`), which need not run again for each trace of a fleet;
/// - stacks by what their analysis reads of each frame (`PortableFunction`), numbered: a
///   stack's group (`RepresentativeStack.groupKey`) and, when every frame has a symbol, its
///   app frames, worked out once, not once per trace;
/// - the classifier's verdict by what it reads of a sample (`PortableSample`): classifying
///   each trace's few distinct samples again would repeat the same verdicts.
///
/// Unchecked `Sendable`: `ReportBuilder` hands each one to a single worker, which uses it
/// from one thread at a time (and always with the same classifier).
final class PortableMemo: @unchecked Sendable {
    private var names: [String: String] = [:]
    private var stacks = KeyNumbers<[PortableFunction]>()
    /// By portable stack number: its group, and its app frames once made (only for stacks whose
    /// frames all have symbols).
    private var facts: [(group: Int, appFrames: [String]?, symbolicated: Bool)] = []
    private var groups = KeyNumbers<[String]>()
    private var verdicts: [PortableSample: Classification] = [:]

    func name(_ frame: Frame, _ namer: TraceNames) -> String {
        guard let symbol = frame.symbol else { return namer.name(frame) }
        if let known = names[symbol] { return known }
        let name = namer.name(frame)
        names[symbol] = name
        return name
    }

    /// The portable number of the stack `frames`.
    func stack(_ frames: [Frame]) -> Int {
        let number = stacks.number(of: frames.map(PortableFunction.init))
        if number == facts.count {
            facts.append(
                (groups.number(of: RepresentativeStack.groupKey(frames)), nil, frames.allSatisfy { $0.symbol != nil }))
        }
        return number
    }

    /// The group of portable stack `number`: stacks of equal groups are one group of samples.
    func group(ofStack number: Int) -> Int { facts[number].group }

    /// The app frames of portable stack `number`, whose frames in some trace are `frames`,
    /// made by `make` the first time; nil when a frame has no symbol (then its name depends on
    /// the trace).
    func appFrames(ofStack number: Int, _ frames: [Frame], _ make: ([Frame]) -> [String]) -> [String]? {
        guard facts[number].symbolicated else { return nil }
        if let known = facts[number].appFrames { return known }
        let made = make(frames)
        facts[number].appFrames = made
        return made
    }

    /// `classifier`'s verdict on `input`, whose stack is portable stack `stack`, once per
    /// portable sample.
    func verdict(_ input: ClassifierInput, stack: Int, _ classifier: Classifier) -> Classification {
        let key = PortableSample(input, stack: stack)
        if let known = verdicts[key] { return known }
        var verdict = classifier.classify(input)
        // The reason may be a frame's symbol (the function computing): named as frames are.
        verdict.reason = FrameNamer.cut(verdict.reason)
        verdicts[key] = verdict
        return verdict
    }
}

/// What the analysis reads of a frame: its symbol and module (the classifier's frame cache
/// judges a frame by those) and file (compiler-generated glue is known by it); not its address
/// or line.
struct PortableFunction: Hashable {
    var symbol: String?
    var module: String?
    var file: String?

    init(_ frame: Frame) {
        symbol = frame.symbol
        module = frame.module
        file = frame.file
    }

    /// Hashed by the symbol alone (equal functions have equal symbols; a symbol seldom comes
    /// from two modules or files), so numbering a stack hashes one string per frame, not
    /// three; equality still compares all three.
    func hash(into hasher: inout Hasher) {
        hasher.combine(symbol)
    }
}

/// A sample's `ClassifierInput` across traces: its frames by the worker's number for their
/// functions (`PortableFunction`s, which say at least what the classifier reads of a frame),
/// the rest of the input as it is. Two samples of different traces with equal portable samples
/// get the same verdict.
struct PortableSample: Hashable {
    var stack: Int
    /// The input without its frames (`stack` stands for them).
    var rest: ClassifierInput

    init(_ input: ClassifierInput, stack: Int) {
        self.stack = stack
        rest = input
        rest.frames = []
    }
}

/// Where a stall's work was registered. A heartbeat stall's callout is the monitor's heartbeat
/// (`heartbeat:0`), not the app's code: its site is the outermost app frame of its stack, the
/// handler or block the executor ran (`BlockingHandler.channelRead` on a swift-nio loop, whose
/// frames are infrastructure; the block posted to the main queue), at that frame's source line,
/// its file as `Folder/File.swift`. Without such a frame with a line, the callout's own.
struct StallSite {
    var file: String
    var line: UInt32

    init(_ callout: CalloutIdentity, frames: [Frame]) {
        file = callout.file
        line = callout.line
        guard ExecutorName.isExecutor(callout),
            let handler = frames.last(where: { !$0.isSystem && !isCompilerGenerated($0) && $0.line != nil }),
            let path = handler.file, let line = handler.line
        else { return }
        file = path.split(separator: "/").suffix(2).joined(separator: "/")
        self.line = line
    }
}
