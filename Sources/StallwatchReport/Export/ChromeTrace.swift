import StallwatchCore

#if canImport(Glibc)
    import Glibc
#endif

/// The Chrome trace event format (JSON object form), which Perfetto UI and chrome://tracing
/// open: on the main thread's track, in `full` mode every callout is a complete (`X`) event,
/// each stall is an `X` event inside its callout, and each sample is a thread-scoped instant
/// (`i`) event inside its stall whose `sf` points into `stackFrames`. Timestamps are
/// microseconds from the trace's start (or its first event, if one began before the recorder
/// did), written exactly (three decimals: nanoseconds).
///
/// The format allows slices on one thread only to nest or be disjoint (Perfetto drops a
/// slice that overlaps its parent, catapult overprints it), so the track is laid out to nest
/// exactly (`ChromeTrack`): a stall is drawn on its callout's clock (the callout record and
/// the stall record read two clocks a few microseconds apart), its samples are clamped into
/// it, and a stall that never ended is drawn to its end as the decoder set it (`drawnEnd`).
/// The exact values stay in each event's `args`.
///
/// Pure; use it on any thread.
package enum ChromeTraceExporter {
    /// `loaded` as Chrome trace JSON. `stalls` are its stalls as `ReportBuilder.analyze(_:)`
    /// classified them; its callouts are drawn only if it was loaded with `includeCallouts`.
    package static func export(_ loaded: LoadedTrace, stalls: [AnalyzedStall]) -> String {
        var text = ""
        write(loaded, stalls: stalls, to: &text)
        return text
    }

    /// `export(_:stalls:)` written to `out` event by event. With `records` (the trace's bytes,
    /// `loaded` having no callouts), the callouts are read from them as they are drawn.
    package static func write(
        _ loaded: LoadedTrace, stalls: [AnalyzedStall], records: [UInt8]? = nil, to out: inout some TextOutputStream
    ) {
        let header = loaded.trace.header
        let pid = Int(header?.pid ?? 1)
        var callouts =
            records.map { CalloutTrack.reading($0, stalls: stalls.map(\.stall)) }
            ?? CalloutTrack(loaded.callouts, stalls: stalls.map(\.stall))
        // The recorder's start, or the first event if one began before it (the callout that
        // was running when the recorder attached), so no timestamp is negative.
        let first = min(stalls.map(\.stall.start).min() ?? .max, callouts.first ?? .max)
        let origin = min(header?.clockBase ?? first, first)
        let ids = "\"pid\": \(pid), \"tid\": \(pid)"
        func ts(_ time: UInt64) -> String { micros(Int64(bitPattern: time &- origin)) }

        // 1. The stalls' slices, on their callouts' clock; the callouts' come as they are read.
        var stallSlices: [ChromeTrack.Slice] = stalls.enumerated().map { index, analyzed in
            let end = analyzed.drawnEnd
            guard let outer = callouts.matched[index] else {
                return ChromeTrack.Slice(
                    start: analyzed.stall.start, end: max(end, analyzed.stall.start), layer: 1, item: index)
            }
            return ChromeTrack.Slice(
                start: outer.start, end: max(outer.start, min(end, max(outer.end, outer.start))), layer: 1, item: index)
        }
        stallSlices.sort { $0.key < $1.key }

        out.write(
            "{\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"exporter\": "
                + "\(JSONOutput.string("stallwatch \(StallwatchVersion.current)")), \"trace\": "
                + "\(JSONOutput.string(loaded.path))},\n\"traceEvents\": [\n")
        out.write(
            "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \(ids), \"args\": {\"name\": "
                + "\(JSONOutput.string(header?.processName ?? "process"))}}")
        out.write(",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \(ids), \"args\": {\"name\": \"main\"}}")

        // 2. Every slice laid out in track order, nested exactly (`ChromeTrack.Layout`), and
        // written; each stall's samples marked inside it and written in track order among the
        // slices (a stall's samples keep their order behind it), each stack's `stackFrames`
        // entry made the first time.
        var layout = ChromeTrack.Layout()
        var requeued: [Pending] = []  // in track order
        var nextStall = 0
        var frames = StackFrameTable()
        // Each distinct stack's `stackFrames` id and JSON text, by number.
        var stacks: [(frame: Int, text: String)] = []
        var stackNumbers: [SampleStackKey: Int] = [:]
        var marks: [SampleMark] = []  // not written yet, in track order
        var position = 0
        // The smallest of the three sources' next keys (no array: this runs twice per callout).
        func nextKey() -> ChromeTrack.OrderKey? {
            var best = callouts.peek()?.slice.key
            if nextStall < stallSlices.count, best.map({ stallSlices[nextStall].key < $0 }) ?? true {
                best = stallSlices[nextStall].key
            }
            if let key = requeued.first?.slice.key, best.map({ key < $0 }) ?? true { best = key }
            return best
        }
        func take() -> Pending? {
            guard let key = nextKey() else { return nil }
            if let head = requeued.first, head.slice.key == key { return requeued.removeFirst() }
            if nextStall < stallSlices.count, stallSlices[nextStall].key == key {
                nextStall += 1
                return Pending(slice: stallSlices[nextStall - 1], callout: nil)
            }
            return callouts.pop().map { Pending(slice: $0.slice, callout: $0) }
        }
        while let pending = take() {
            let slice: ChromeTrack.Slice
            switch layout.place(pending.slice, before: nextKey()) {
            case .requeued(let moved):
                requeued.insert(
                    Pending(slice: moved, callout: pending.callout),
                    at: requeued.partitioningIndex { !($0.slice.key < moved.key) })
                continue
            case .laid(let laid):
                slice = laid
            }
            while let mark = marks.first, mark.key < slice.key {
                writeMark(mark, stalls: stalls, stacks: stacks, ids: ids, ts: ts, to: &out)
                marks.removeFirst()
            }
            let dur = micros(Int64(slice.end - slice.start))
            if let callout = pending.callout {
                let text = callouts.texts[callout.place]
                out.write(
                    """
                    ,\n{"name": \(text.name), "cat": "callout", "ph": "X", \
                    "ts": \(ts(slice.start)), "dur": \(dur), \(ids), "args": {"site": \
                    \(text.site), "mode": \(text.mode), "durationMs": \(millis(callout.duration))}}
                    """)
                position += 1
                continue
            }
            let analyzed = stalls[slice.item]
            let stall = analyzed.stall
            let unfinished = stall.flags.contains(.unfinished)
            let name =
                "\(stall.tier.rawValue) \(analyzed.category.rawValue): \(analyzed.site)"
                + (unfinished ? " (unfinished)" : "")
            let extent: String
            if unfinished {
                extent = "drawn until the last time the trace says it ran (the stall never ended)"
            } else if callouts.matched[slice.item] != nil {
                extent = "drawn on its callout's clock"
            } else {
                extent = "as recorded"
            }
            // Samples sit strictly inside the stall's slice (a sample on its last nanosecond
            // would touch a callout that starts right then).
            let last = slice.end > slice.start ? slice.end - 1 : slice.start
            var sampleStacks: [Int] = []
            sampleStacks.reserveCapacity(stall.samples.count)
            for (index, sample) in stall.samples.enumerated() {
                let key = SampleStackKey(analyzed, sample: index, category: nil)
                if stackNumbers[key] == nil {
                    let names = analyzed.frameNames(ofSample: index)
                    stackNumbers[key] = stacks.count
                    stacks.append(
                        names.isEmpty
                            ? (frames.id([missingStackName(sample)]), JSONOutput.string(missingStackName(sample)))
                            : (
                                frames.id(Array(names.reversed())[...]),
                                JSONOutput.string(names.joined(separator: "\n"))
                            ))
                }
                let mark = SampleMark(
                    at: min(max(sample.time, slice.start), last), position: position, stall: slice.item,
                    sample: index, stack: stackNumbers[key]!)
                sampleStacks.append(mark.stack)
                marks.insert(mark, at: marks.partitioningIndex { mark.order < $0.order })
            }
            // The representative stack's text is its sample's (the same names, one a line).
            let representative =
                analyzed.representativeSample.flatMap { stall.samples[$0].frames.isEmpty ? nil : $0 }
                .map { stacks[sampleStacks[$0]].text } ?? JSONOutput.string("")
            let site = analyzed.site
            out.write(
                """
                ,\n{"name": \(JSONOutput.string(name)), "cat": "stall", "ph": "X", "ts": \(ts(slice.start)), \
                "dur": \(dur), \(ids), "args": {"id": \(stall.id), \
                "tier": "\(stall.tier.rawValue)", "category": "\(analyzed.category.rawValue)", \
                "signature": \(JSONOutput.string(analyzed.key.text)), "site": \(JSONOutput.string(site)), \
                "label": \(JSONOutput.string(stall.callout.label ?? "")), "mode": \(JSONOutput.string(stall.callout.mode)), \
                "unfinished": \(unfinished), "durationMs": \(millis(analyzed.durationNanos)), \
                "samples": \(stall.samples.count), "extent": \(JSONOutput.string(extent)), \
                "stackConfidence": \(representativeConfidence(analyzed)), \
                "representativeStack": \(representative)}}
                """)
            position += 1
        }
        for mark in marks { writeMark(mark, stalls: stalls, stacks: stacks, ids: ids, ts: ts, to: &out) }
        out.write("\n],\n\"stackFrames\": {\n")
        for (index, entry) in frames.entries.enumerated() { out.write(index == 0 ? entry : ",\n" + entry) }
        out.write("\n}\n}\n")
    }

    /// A slice waiting to be laid out: a callout's (with what its event says) or a stall's.
    private struct Pending {
        var slice: ChromeTrack.Slice
        var callout: CalloutTrack.Entry?
    }

    /// A sample's mark in the track: where it is drawn, its stall's place in the laid-out
    /// track, the stall and sample, its stack.
    private struct SampleMark {
        var at: UInt64
        var position: Int
        var stall: Int
        var sample: Int
        /// Its stack's number among the export's distinct stacks.
        var stack: Int

        /// Where it goes among the track's slices.
        var key: ChromeTrack.OrderKey { ChromeTrack.OrderKey(start: at, end: at, layer: 2) }
        /// Where it goes among marks.
        var order: (UInt64, Int, Int) { (at, position, sample) }
    }

    /// One sample's instant event.
    private static func writeMark(
        _ mark: SampleMark, stalls: [AnalyzedStall], stacks: [(frame: Int, text: String)],
        ids: String, ts: (UInt64) -> String, to out: inout some TextOutputStream
    ) {
        // Read in place: a copy of the stall would retain each of its arrays, for every sample.
        let sample = stalls[mark.stall].stall.samples[mark.sample]
        let verdict = stalls[mark.stall].classifications[mark.sample]
        let id = stalls[mark.stall].stall.id
        let stack = stacks[mark.stack]
        let label = sample.captureTimedOut ? "\(verdict.reason) (capture timed out)" : verdict.reason
        // One interpolation and the stack as it is: each piece copied once, into the output.
        out.write(
            """
            ,\n{"name": \(JSONOutput.string(label)), "cat": "sample", "ph": "i", "s": "t", \
            "ts": \(ts(mark.at)), \(ids), "sf": \(stack.frame), "args": {"stall": \(id), \
            "thread": \(sample.tid), "time": \(ts(sample.time)), "state": "\(sample.state.name)", \
            "syscall": \(JSONOutput.string(sample.syscallName ?? "")), \
            "category": "\(verdict.category.rawValue)", \
            "captureTimedOut": \(sample.captureTimedOut), "stack":
            """)
        out.write(" ")
        out.write(stack.text)
        out.write("}}")
    }

    /// Nanoseconds as microseconds with three decimals, exactly (no floating point).
    static func micros(_ nanos: Int64) -> String {
        fixedPoint(nanos.magnitude, places: 3, negative: nanos < 0)
    }

    /// Nanoseconds as milliseconds with six decimals, exactly.
    static func millis(_ nanos: UInt64) -> String {
        fixedPoint(nanos, places: 6)
    }

    /// `value` divided by 10^`places`, with exactly `places` decimals, `-` first if `negative`:
    /// digits written into a few bytes on the stack (a track has an event per callout, each
    /// with three of these).
    private static func fixedPoint(_ value: UInt64, places: Int, negative: Bool = false) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { buffer in
            var position = buffer.count
            func put(_ byte: UInt8) {
                position -= 1
                buffer[position] = byte
            }
            var rest = value
            for _ in 0..<places {
                put(UInt8(ascii: "0") + UInt8(rest % 10))
                rest /= 10
            }
            put(UInt8(ascii: "."))
            repeat {
                put(UInt8(ascii: "0") + UInt8(rest % 10))
                rest /= 10
            } while rest > 0
            if negative { put(UInt8(ascii: "-")) }
            return String(decoding: buffer[position...], as: UTF8.self)
        }
    }

    /// Its share of the stall's samples, with four decimals: C's `%.4f` (correctly rounded).
    private static func representativeConfidence(_ analyzed: AnalyzedStall) -> String {
        let value = analyzed.representative?.confidence ?? 0
        let length = Int(withVaList([value]) { vsnprintf(nil, 0, "%.4f", $0) })
        var text = [CChar](repeating: 0, count: length + 1)
        _ = withVaList([value]) { vsnprintf(&text, text.count, "%.4f", $0) }
        return String(decoding: text.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The `stackFrames` tree: one entry per distinct stack prefix, outermost first.
private struct StackFrameTable {
    private var ids: [[String]: Int] = [:]
    private(set) var entries: [String] = []

    mutating func id(_ names: ArraySlice<String>) -> Int {
        if let known = ids[Array(names)] { return known }
        let parent = names.count > 1 ? id(names.dropLast()) : nil
        let id = ids.count + 1
        ids[Array(names)] = id
        entries.append(
            "\"\(id)\": {\"name\": \(JSONOutput.string(names.last!))" + (parent.map { ", \"parent\": \"\($0)\"" } ?? "")
                + "}")
        return id
    }
}
