import StallwatchCore

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
/// it, and a stall that never ended is drawn to the trace's last timestamp (`StallExtents`).
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

    /// `export(_:stalls:)` written to `out` event by event.
    package static func write(_ loaded: LoadedTrace, stalls: [AnalyzedStall], to out: inout some TextOutputStream) {
        let header = loaded.trace.header
        let pid = Int(header?.pid ?? 1)
        // The recorder's start, or the first event if one began before it (the callout that
        // was running when the recorder attached), so no timestamp is negative.
        let first = min(stalls.map(\.stall.start).min() ?? .max, loaded.callouts.map(\.start).min() ?? .max)
        let origin = min(header?.clockBase ?? first, first)
        let ids = "\"pid\": \(pid), \"tid\": \(pid)"
        func ts(_ time: UInt64) -> String { micros(Int64(bitPattern: time &- origin)) }

        // 1. The slices of the main thread's track: callouts, then stalls on their callouts' clock.
        var slices: [ChromeTrack.Slice] = []
        slices.reserveCapacity(loaded.callouts.count + stalls.count)
        for (index, callout) in loaded.callouts.enumerated() {
            slices.append(
                ChromeTrack.Slice(start: callout.start, end: callout.start &+ callout.duration, layer: 0, item: index))
        }
        let extents = StallExtents(stalls, traces: [loaded])
        let matched = CalloutMatcher.callouts(of: stalls.map(\.stall), in: loaded.callouts)
        for (index, analyzed) in stalls.enumerated() {
            let stall = analyzed.stall
            let end = extents.end(of: analyzed)
            let callout = matched[index]
            if let callout {
                let outer = slices[callout]
                slices.append(
                    ChromeTrack.Slice(
                        start: outer.start, end: max(outer.start, min(end, outer.end)), layer: 1, item: index))
            } else {
                slices.append(ChromeTrack.Slice(start: stall.start, end: end, layer: 1, item: index))
            }
        }
        // 2. Nest them exactly.
        let laidOut = ChromeTrack.nest(consume slices)

        // 3. The sample marks, each inside its stall's slice, in track order (a stall's samples
        // keep their order behind it), each stack's `stackFrames` entry made the first time.
        var frames = StackFrameTable()
        var stacks: [SampleStackKey: (frame: Int, text: String)] = [:]
        var marks: [SampleMark] = []
        for (position, slice) in laidOut.enumerated() where slice.layer == 1 {
            let analyzed = stalls[slice.item]
            // Samples sit strictly inside the stall's slice (a sample on its last nanosecond
            // would touch a callout that starts right then).
            let last = slice.end > slice.start ? slice.end - 1 : slice.start
            for (index, sample) in analyzed.stall.samples.enumerated() {
                let key = SampleStackKey(analyzed, sample: index, category: nil)
                if stacks[key] == nil {
                    let names = analyzed.frameNames(ofSample: index)
                    stacks[key] =
                        names.isEmpty
                        ? (frames.id([missingStackName(sample)]), JSONOutput.string(missingStackName(sample)))
                        : (frames.id(Array(names.reversed())[...]), JSONOutput.string(names.joined(separator: "\n")))
                }
                marks.append(
                    SampleMark(
                        at: min(max(sample.time, slice.start), last), position: position, stall: slice.item,
                        sample: index, stack: key))
            }
        }
        marks.sort { ($0.at, $0.position, $0.sample) < ($1.at, $1.position, $1.sample) }

        // 4. The events, slices and marks merged in track order.
        out.write(
            "{\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"exporter\": "
                + "\(JSONOutput.string("stallwatch \(StallwatchVersion.current)")), \"trace\": "
                + "\(JSONOutput.string(loaded.path))},\n\"traceEvents\": [\n")
        out.write(
            "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \(ids), \"args\": {\"name\": "
                + "\(JSONOutput.string(header?.processName ?? "process"))}}")
        out.write(",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \(ids), \"args\": {\"name\": \"main\"}}")
        var callouts = CalloutTexts()
        var next = 0
        for slice in laidOut {
            while next < marks.count,
                ChromeTrack.OrderKey(start: marks[next].at, end: marks[next].at, layer: 2) < slice.key
            {
                writeMark(marks[next], stalls: stalls, stacks: stacks, ids: ids, ts: ts, to: &out)
                next += 1
            }
            let dur = micros(Int64(slice.end - slice.start))
            if slice.layer == 0 {
                let callout = loaded.callouts[slice.item]
                let text = callouts.text(callout)
                out.write(
                    """
                    ,\n{"name": \(text.name), "cat": "callout", "ph": "X", \
                    "ts": \(ts(slice.start)), "dur": \(dur), \(ids), "args": {"site": \
                    \(text.site), "mode": \(text.mode), "durationMs": \(millis(callout.duration))}}
                    """)
                continue
            }
            let analyzed = stalls[slice.item]
            let stall = analyzed.stall
            let unfinished = stall.end == nil || stall.flags.contains(.unfinished)
            let name =
                "\(stall.tier.rawValue) \(analyzed.category.rawValue): \(analyzed.site)"
                + (unfinished ? " (unfinished)" : "")
            let extent: String
            if stall.end == nil {
                extent = "drawn until the trace's last record (the stall never ended)"
            } else if matched[slice.item] != nil {
                extent = "drawn on its callout's clock"
            } else {
                extent = "as recorded"
            }
            out.write(
                ",\n{\"name\": \(JSONOutput.string(name)), \"cat\": \"stall\", \"ph\": \"X\", \"ts\": \(ts(slice.start)), "
                    + "\"dur\": \(dur), \(ids), \"args\": {\"id\": \(stall.id), "
                    + "\"tier\": \"\(stall.tier.rawValue)\", \"category\": \"\(analyzed.category.rawValue)\", "
                    + "\"signature\": \(JSONOutput.string(analyzed.key.text)), \"site\": \(JSONOutput.string(analyzed.site)), "
                    + "\"label\": \(JSONOutput.string(stall.callout.label ?? "")), \"mode\": \(JSONOutput.string(stall.callout.mode)), "
                    + "\"unfinished\": \(unfinished), \"durationMs\": \(millis(analyzed.durationNanos)), "
                    + "\"samples\": \(stall.samples.count), \"extent\": \(JSONOutput.string(extent)), "
                    + "\"stackConfidence\": \(representativeConfidence(analyzed)), "
                    + "\"representativeStack\": \(JSONOutput.string(analyzed.representativeNames.joined(separator: "\n")))}}"
            )
        }
        while next < marks.count {
            writeMark(marks[next], stalls: stalls, stacks: stacks, ids: ids, ts: ts, to: &out)
            next += 1
        }
        out.write("\n],\n\"stackFrames\": {\n")
        for (index, entry) in frames.entries.enumerated() { out.write(index == 0 ? entry : ",\n" + entry) }
        out.write("\n}\n}\n")
    }

    /// A sample's mark in the track: where it is drawn, its stall's place in the laid-out
    /// track, the stall and sample, its stack.
    private struct SampleMark {
        var at: UInt64
        var position: Int
        var stall: Int
        var sample: Int
        var stack: SampleStackKey
    }

    /// One sample's instant event.
    private static func writeMark(
        _ mark: SampleMark, stalls: [AnalyzedStall], stacks: [SampleStackKey: (frame: Int, text: String)],
        ids: String, ts: (UInt64) -> String, to out: inout some TextOutputStream
    ) {
        // Read in place: a copy of the stall would retain each of its arrays, for every sample.
        let sample = stalls[mark.stall].stall.samples[mark.sample]
        let verdict = stalls[mark.stall].classifications[mark.sample]
        let id = stalls[mark.stall].stall.id
        let stack = stacks[mark.stack]!
        let label = sample.captureTimedOut ? "\(verdict.reason) (capture timed out)" : verdict.reason
        // One interpolation and the stack as it is: each piece copied once, into the output.
        out.write(
            """
            ,\n{"name": \(JSONOutput.string(label)), "cat": "sample", "ph": "i", "s": "t", \
            "ts": \(ts(mark.at)), \(ids), "sf": \(stack.frame), "args": {"stall": \(id), \
            "time": \(ts(sample.time)), "state": "\(sample.state.name)", \
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

    /// Its share of the stall's samples, with four decimals.
    private static func representativeConfidence(_ analyzed: AnalyzedStall) -> String {
        String(format: "%.4f", analyzed.representative?.confidence ?? 0)
    }
}

/// The JSON texts of a callout event's name, site and mode, made once per place.
private struct CalloutTexts {
    private var known: [ObjectIdentifier: (name: String, site: String, mode: String)] = [:]

    mutating func text(_ callout: CalloutEvent) -> (name: String, site: String, mode: String) {
        let key = ObjectIdentifier(callout.place)
        if let text = known[key] { return text }
        let site = callout.site
        let name = site?.label ?? site.map { "\($0.kind) \($0.file):\($0.line)" } ?? "callout"
        let text = (
            JSONOutput.string(name), JSONOutput.string(site.map { "\($0.file):\($0.line)" } ?? "?"),
            JSONOutput.string(callout.mode)
        )
        known[key] = text
        return text
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

/// Finds the callout record a stall happened in: same call site, the start nearest the
/// stall's (the two are read from different clocks, well under a millisecond apart).
private struct CalloutMatcher {
    /// How far apart the two clocks may put the same start.
    static let tolerance: UInt64 = 1_000_000

    private let callouts: [CalloutEvent]
    /// The callouts' indices by start; nil when they are in start order already (a full-mode
    /// trace's usually are: one loop runs one callout at a time).
    private let byStart: [Int]?

    init(_ callouts: [CalloutEvent]) {
        self.callouts = callouts
        let sorted = zip(callouts, callouts.dropFirst()).allSatisfy { $0.start <= $1.start }
        byStart = sorted ? nil : callouts.indices.sorted { (callouts[$0].start, $0) < (callouts[$1].start, $1) }
    }

    /// The index of the callout at `position` in start order.
    private func index(at position: Int) -> Int { byStart?[position] ?? position }

    /// The callout each of `stalls` happened in (`callout(of:)`); the matcher's index is let go
    /// when done.
    static func callouts(of stalls: [Stall], in callouts: [CalloutEvent]) -> [Int?] {
        let matcher = CalloutMatcher(callouts)
        return stalls.map(matcher.callout)
    }

    func callout(of stall: Stall) -> Int? {
        let low = stall.start > Self.tolerance ? stall.start - Self.tolerance : 0
        var position = callouts.indices.partitioningIndex { callouts[index(at: $0)].start >= low }
        var best: (index: Int, distance: UInt64)?
        while position < callouts.count, callouts[index(at: position)].start <= stall.start &+ Self.tolerance {
            let found = index(at: position)
            position += 1
            let callout = callouts[found]
            guard let site = callout.site, site.file == stall.callout.file, site.line == stall.callout.line,
                site.label == stall.callout.label
            else { continue }
            let distance = callout.start > stall.start ? callout.start - stall.start : stall.start - callout.start
            if best.map({ distance < $0.distance }) ?? true { best = (found, distance) }
        }
        return best?.index
    }
}
