import StallwatchCore

/// The data block of the HTML report: the report's figures, one lane per trace (frame-clock
/// intervals, loop busy time per interval, stalls), every signature, a flame graph of every
/// sample, and the strings, frames and stacks they share, each stored once. The page's script
/// (Render/Page/report.js) reads it; `docs/cli.md` describes the layout.
///
/// Pure; use it on any thread.
struct HTMLReportData {
    private var writer = JSONWriter(forHTML: true)
    private var strings: [String] = []
    private var stringIndex: [String: Int] = [:]
    private var frames: [StallReport.StackFrame] = []
    private var frameIndex: [StallReport.StackFrame: Int] = [:]
    private var stacks: [[Int]] = []
    private var stackIndex: [[Int]: Int] = [:]
    /// The interned stack of each distinct representative sample's stack.
    private var sampleStacks: [SampleStackKey: Int] = [:]

    /// The JSON text of the data block.
    static func json(_ report: StallReport, traces: [LoadedTrace], analyzed: [[AnalyzedStall]]) -> String {
        var data = HTMLReportData()
        return data.encode(report, traces: traces, analyzed: analyzed)
    }

    private mutating func intern(_ text: String) -> Int {
        if let index = stringIndex[text] { return index }
        strings.append(text)
        stringIndex[text] = strings.count - 1
        return strings.count - 1
    }

    private mutating func intern(stack: [StallReport.StackFrame]) -> Int {
        let ids = stack.map { frame -> Int in
            if let index = frameIndex[frame] { return index }
            frames.append(frame)
            frameIndex[frame] = frames.count - 1
            return frames.count - 1
        }
        if let index = stackIndex[ids] { return index }
        stacks.append(ids)
        stackIndex[ids] = stacks.count - 1
        return stacks.count - 1
    }

    /// The interned stack of sample `index` of `analyzed`, its frames named once per stack.
    private mutating func representativeStack(_ analyzed: AnalyzedStall, sample index: Int) -> Int {
        let key = SampleStackKey(analyzed, sample: index, category: nil)
        if let known = sampleStacks[key] { return known }
        let stack = intern(
            stack: analyzed.stall.samples[index].frames.map { ReportBuilder.stackFrame($0, names: analyzed.names) })
        sampleStacks[key] = stack
        return stack
    }

    private mutating func encode(_ report: StallReport, traces: [LoadedTrace], analyzed: [[AnalyzedStall]]) -> String {
        var signatureIndex: [SignatureKey: Int] = [:]
        for (index, signature) in report.signatures.enumerated() { signatureIndex[signature.key] = index }
        var body = JSONWriter(forHTML: true)
        body.key("version", first: true)
        body.int(1)
        body.key("categories")
        body.array(StallCategory.allCases) { $0.string($1.rawValue) }
        body.key("tiers")
        body.array(Tier.allCases) { $0.string($1.rawValue) }
        body.key("summary")
        summary(report, into: &body)

        var extent = 0.0
        var lanes: [String] = []
        for (index, trace) in traces.enumerated() {
            let lane = self.lane(
                trace, index: index, info: report.traces[index], stalls: analyzed[index], signatures: signatureIndex)
            extent = max(extent, lane.extent)
            lanes.append(lane.json)
        }
        body.key("extentMs")
        body.number(extent)
        body.key("traces")
        body.raw("[" + lanes.joined(separator: ",") + "]")

        body.key("signatures")
        let signatureRows = report.signatures.map { signature in signatureJSON(signature) }
        body.raw("[" + signatureRows.joined(separator: ",") + "]")
        body.key("flame")
        body.raw(flame(analyzed.flatMap { $0 }))

        // Last, once everything above has interned its names.
        body.key("frames")
        let frameList = frames
        var frameRows: [String] = []
        frameRows.reserveCapacity(frameList.count)
        for frame in frameList {
            let symbol = intern(frame.symbol)
            let source = frame.source.map { intern($0) } ?? -1
            let module = frame.module.map { intern(String(Frame.basename($0))) } ?? -1
            frameRows.append("[\(symbol),\(source),\(module),\(frame.system ? 1 : 0)]")
        }
        body.raw("[" + frameRows.joined(separator: ",") + "]")
        body.key("stacks")
        body.array(stacks) { writer, stack in writer.array(stack) { $0.int($1) } }
        body.key("strings")
        body.array(strings) { $0.string($1) }
        return "{" + body.text + "}"
    }

    private func summary(_ report: StallReport, into body: inout JSONWriter) {
        body.raw("{")
        body.key("runTimeSeconds", first: true)
        body.number(report.runTimeSeconds)
        body.key("loopUtilisation")
        body.optional(report.loopUtilisation) { $0.raw(String($1)) }
        body.key("frames")
        body.optional(report.frames) { body, frames in
            body.raw(
                "{\"expected\":\(frames.expected),\"delivered\":\(frames.delivered),\"dropped\":\(frames.dropped),"
                    + "\"fps\":\(JSONWriter.number(frames.fps))}")
        }
        body.key("hitchRatioMsPerSecond")
        body.number(report.hitchRatioMsPerSecond)
        body.key("hitchGrade")
        body.string(report.hitchGrade.band)
        body.key("hangRateSecondsPerHour")
        body.number(report.hangRateSecondsPerHour)
        let stalls = report.stalls
        body.key("stalls")
        body.raw("{\"total\":\(stalls.total),\"unfinished\":\(stalls.unfinished),\"hangs\":\(stalls.hangs),")
        body.raw("\"hangMs\":" + JSONWriter.number(stalls.hangMs) + ",")
        body.raw("\"totalMs\":" + JSONWriter.number(stalls.totalMs) + ",\"byTier\":")
        body.array(Tier.allCases) { $0.int(stalls.byTier[$1] ?? 0) }
        body.key("byCategory")
        body.array(StallCategory.allCases) { $0.int(stalls.byCategory[$1] ?? 0) }
        body.key("categoryMs")
        body.array(StallCategory.allCases) { $0.number(stalls.categoryMs[$1] ?? 0) }
        body.raw("}")
        body.key("loopLatency")
        body.optional(report.loopLatency) { body, latency in
            body.raw(
                "{\"count\":\(latency.count),\"p50Ms\":\(JSONWriter.number(latency.p50Ms)),"
                    + "\"p99Ms\":\(JSONWriter.number(latency.p99Ms)),"
                    + "\"maxMs\":\(JSONWriter.number(latency.maxMs))}")
        }
        body.key("signatureCount")
        body.int(report.signatureCount)
        body.raw("}")
    }

    /// One trace's lane: its identity, frame-clock intervals, busy time and stalls, with
    /// times in milliseconds from the trace's start (the header's clock base).
    private mutating func lane(
        _ trace: LoadedTrace, index: Int, info: StallReport.TraceInfo, stalls: [AnalyzedStall],
        signatures: [SignatureKey: Int]
    ) -> (json: String, extent: Double) {
        let decoded = trace.trace
        let base = decoded.header?.clockBase ?? decoded.bareStalls.map(\.start).min() ?? 0
        func offset(_ time: UInt64) -> Double { time > base ? Double(time - base) / 1e6 : 0 }
        var lane = JSONWriter(forHTML: true)
        lane.add("path", info.path)
        lane.add("process", info.process)
        lane.add("pid", raw: String(info.pid))
        lane.add("mode", info.mode?.name ?? "unknown")
        lane.key("problems")
        lane.array(info.problems) { $0.string($1) }
        var extent = info.runTimeSeconds * 1_000
        lane.key("frameClock")
        lane.array(decoded.frameClock) { writer, record in
            writer.raw("[" + JSONWriter.number(offset(record.intervalStart)) + ",")
            writer.raw(JSONWriter.number(Double(record.intervalLength) / 1e6))
            writer.raw(",\(record.expected),\(record.delivered),\(record.dropped)]")
        }
        lane.key("busy")
        lane.optional(trace.busy) { lane, busy in
            lane.raw("{\"binMs\":" + JSONWriter.number(busy.binMs) + ",\"permille\":")
            lane.array(busy.permille) { $0.int($1) }
            lane.raw("}")
        }
        // Stalls in start order, each
        // [id, startMs, durationMs, tier, category, site, signature, stack, unfinished,
        //  samples, category permille, [[reason, permille]…], label, kind, expected reason,
        //  [[app-state key, value]…] by key].
        lane.key("stalls")
        let sorted = stalls.sorted { ($0.stall.start, $0.stall.id) < ($1.stall.start, $1.stall.id) }
        var rows: [String] = []
        rows.reserveCapacity(sorted.count)
        for analyzed in sorted {
            let stall = analyzed.stall
            let start = offset(stall.start)
            let duration = Double(analyzed.durationNanos) / 1e6
            extent = max(extent, start + duration)
            let stack = analyzed.representativeSample.map { representativeStack(analyzed, sample: $0) } ?? -1
            var row = JSONWriter(forHTML: true)
            row.raw("[\(stall.id),")
            row.number(start)
            row.raw(",")
            row.number(duration)
            row.raw(",\(stall.tier.ordinal)")
            row.raw(",\(analyzed.category.ordinal)")
            row.raw(",\(intern(analyzed.site)),\(signatures[analyzed.key] ?? -1),\(stack)")
            row.raw(",\(stall.flags.contains(.unfinished) ? 1 : 0),\(stall.samples.count),")
            row.array(StallCategory.allCases) { $0.int(Int((analyzed.breakdown.share(of: $1) * 1_000).rounded())) }
            row.raw(",")
            let reasons = analyzed.breakdown.topReasons.map { (intern($0.reason), Int(($0.share * 1_000).rounded())) }
            row.array(reasons) { $0.raw("[\($1.0),\($1.1)]") }
            row.raw(",\(stall.callout.label.map { intern($0) } ?? -1),\(intern("\(stall.callout.kind)"))")
            row.raw(",\(stall.expected.map { intern($0) } ?? -1),")
            let state = stall.context.sorted { $0.key < $1.key }.map { (intern($0.key), intern($0.value)) }
            row.array(state) { $0.raw("[\($1.0),\($1.1)]") }
            row.raw("]")
            rows.append(row.text)
        }
        lane.raw("[" + rows.joined(separator: ",") + "]")
        lane.key("runMs")
        lane.number(extent)
        return ("{" + lane.text + "}", extent)
    }

    private mutating func signatureJSON(_ signature: StallReport.Signature) -> String {
        var row = JSONWriter(forHTML: true)
        row.add("category", raw: String(signature.category.ordinal))
        row.key("frames")
        let frameNames = signature.frames.map { intern($0) }
        row.array(frameNames) { $0.int($1) }
        row.add("count", raw: String(signature.count))
        row.add("totalMs", raw: JSONWriter.number(signature.totalMs))
        row.add("maxMs", raw: JSONWriter.number(signature.maxMs))
        row.key("tiers")
        row.array(Tier.allCases) { $0.int(signature.tiers[$1] ?? 0) }
        row.key("shares")
        row.array(StallCategory.allCases) { $0.int(Int(((signature.categoryShares[$1] ?? 0) * 1_000).rounded())) }
        row.add("reason", raw: String(intern(signature.reason)))
        row.key("sites")
        let sites = signature.sites.map { (intern($0.site), $0.count) }
        row.array(sites) { $0.raw("[\($1.0),\($1.1)]") }
        row.add("stack", raw: String(signature.stack.isEmpty ? -1 : intern(stack: signature.stack)))
        row.add("ifFixed", raw: signature.ifFixed.map(Self.ifFixedJSON) ?? "null")
        return "{" + row.text + "}"
    }

    /// `{"hitchRatioMsPerSecond":…,"hitchGrade":…,"hangRateSecondsPerHour":…,"droppedFrames":…,"fps":…}`.
    private static func ifFixedJSON(_ ifFixed: StallReport.IfFixed) -> String {
        var row = JSONWriter(forHTML: true)
        row.add("hitchRatioMsPerSecond", raw: JSONWriter.number(ifFixed.hitchRatioMsPerSecond))
        row.add("hitchGrade", ifFixed.hitchGrade.rawValue)
        row.add("hangRateSecondsPerHour", raw: JSONWriter.number(ifFixed.hangRateSecondsPerHour))
        row.add("droppedFrames", ifFixed.droppedFrames)
        row.add("fps", raw: ifFixed.fps.map(JSONWriter.number) ?? "null")
        return "{" + row.text + "}"
    }

    /// Every sample's stack under its category under one root, weighted in microseconds as the
    /// folded export weighs them; nodes in depth-first order as `[name, weight, parent]`
    /// columns (`parent` -1 for the root).
    private mutating func flame(_ stalls: [AnalyzedStall]) -> String {
        var names = [intern("all stalls")]
        var weights: [UInt64] = [0]
        var parents = [-1]
        var children: [[Int: Int]] = [[:]]
        // Each distinct stack's path of nodes, made once.
        var paths: [SampleStackKey: [Int]] = [:]
        for analyzed in stalls {
            let sampleWeights = analyzed.sampleWeights
            for (index, sample) in analyzed.stall.samples.enumerated() {
                let micros = sampleWeights[index] / 1_000
                guard micros > 0 else { continue }
                let category = analyzed.classifications[index].category
                let key = SampleStackKey(analyzed, sample: index, category: category)
                let path: [Int]
                if let known = paths[key] {
                    path = known
                } else {
                    var made: [Int] = []
                    var node = 0
                    for name in rootedStack(sample, category: category, names: analyzed.frameNames(ofSample: index)) {
                        let id = intern(name)
                        if let child = children[node][id] {
                            node = child
                        } else {
                            names.append(id)
                            weights.append(0)
                            parents.append(node)
                            children.append([:])
                            children[node][id] = names.count - 1
                            node = names.count - 1
                        }
                        made.append(node)
                    }
                    paths[key] = made
                    path = made
                }
                weights[0] += micros
                for node in path { weights[node] += micros }
            }
        }
        // Depth-first, heaviest child first, so the page can lay the tree out in one pass.
        var order: [Int] = []
        order.reserveCapacity(names.count)
        var pending = [0]
        while let node = pending.popLast() {
            order.append(node)
            pending += children[node].values.sorted { weights[$0] != weights[$1] ? weights[$0] < weights[$1] : $0 > $1 }
        }
        var position = [Int](repeating: 0, count: names.count)
        for (index, node) in order.enumerated() { position[node] = index }
        var out = JSONWriter(forHTML: true)
        out.raw("{\"name\":")
        out.array(order) { $0.int(names[$1]) }
        out.raw(",\"weight\":")
        out.array(order) { $0.int(weights[$1]) }
        out.raw(",\"parent\":")
        out.array(order) { $0.int(parents[$1] < 0 ? -1 : position[parents[$1]]) }
        out.raw("}")
        return out.text
    }
}
