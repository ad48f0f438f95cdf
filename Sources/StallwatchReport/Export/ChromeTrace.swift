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
        let header = loaded.trace.header
        let pid = Int(header?.pid ?? 1)
        // The recorder's start, or the first event if one began before it (the callout that
        // was running when the recorder attached), so no timestamp is negative.
        let first = min(stalls.map(\.stall.start).min() ?? .max, loaded.callouts.map(\.start).min() ?? .max)
        let origin = min(header?.clockBase ?? first, first)
        let ids = "\"pid\": \(pid), \"tid\": \(pid)"
        func ts(_ time: UInt64) -> String { micros(Int64(bitPattern: time &- origin)) }

        // 1. The slices of the main thread's track: callouts, then stalls on their callouts' clock.
        var slices: [ChromeTrack.Slice] = loaded.callouts.enumerated().map { index, callout in
            ChromeTrack.Slice(start: callout.start, end: callout.start &+ callout.duration, layer: 0, item: index)
        }
        let matcher = CalloutMatcher(loaded.callouts)
        let extents = StallExtents(stalls, traces: [loaded])
        var matched: [Int?] = []
        for (index, analyzed) in stalls.enumerated() {
            let stall = analyzed.stall
            let end = extents.end(of: analyzed)
            let callout = matcher.callout(of: stall)
            matched.append(callout)
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
        let laidOut = ChromeTrack.nest(slices)

        // 3. The events, in track order (a parent before its children, each sample after its stall).
        var frames = StackFrameTable()
        var events: [(key: ChromeTrack.OrderKey, text: String)] = []
        for slice in laidOut {
            let dur = micros(Int64(slice.end - slice.start))
            if slice.layer == 0 {
                let callout = loaded.callouts[slice.item]
                let site = callout.site
                let name = site?.label ?? site.map { "\($0.kind) \($0.file):\($0.line)" } ?? "callout"
                let siteText = site.map { "\($0.file):\($0.line)" } ?? "?"
                events.append(
                    (
                        slice.key,
                        "{\"name\": \(JSONOutput.string(name)), \"cat\": \"callout\", \"ph\": \"X\", "
                            + "\"ts\": \(ts(slice.start)), \"dur\": \(dur), \(ids), \"args\": {\"site\": "
                            + "\(JSONOutput.string(siteText)), \"mode\": \(JSONOutput.string(callout.mode)), "
                            + "\"durationMs\": \(millis(callout.duration))}}"
                    ))
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
            } else if matched[slice.item] != nil {
                extent = "drawn on its callout's clock"
            } else {
                extent = "as recorded"
            }
            events.append(
                (
                    slice.key,
                    "{\"name\": \(JSONOutput.string(name)), \"cat\": \"stall\", \"ph\": \"X\", \"ts\": \(ts(slice.start)), "
                        + "\"dur\": \(dur), \(ids), \"args\": {\"id\": \(stall.id), "
                        + "\"tier\": \"\(stall.tier.rawValue)\", \"category\": \"\(analyzed.category.rawValue)\", "
                        + "\"signature\": \(JSONOutput.string(analyzed.key.text)), \"site\": \(JSONOutput.string(analyzed.site)), "
                        + "\"label\": \(JSONOutput.string(stall.callout.label ?? "")), \"mode\": \(JSONOutput.string(stall.callout.mode)), "
                        + "\"unfinished\": \(unfinished), \"durationMs\": \(millis(analyzed.durationNanos)), "
                        + "\"samples\": \(stall.samples.count), \"extent\": \(JSONOutput.string(extent)), "
                        + "\"stackConfidence\": \(representativeConfidence(analyzed)), "
                        + "\"representativeStack\": \(JSONOutput.string(representativeText(analyzed)))}}"
                ))
            // Samples sit strictly inside the stall's slice (a sample on its last nanosecond
            // would touch a callout that starts right then).
            let last = slice.end > slice.start ? slice.end - 1 : slice.start
            for (index, sample) in stall.samples.enumerated() {
                let verdict = analyzed.classifications[index]
                let at = min(max(sample.time, slice.start), last)
                let names =
                    sample.frames.isEmpty
                    ? [missingStackName(sample)] : sample.frames.reversed().map(analyzed.frameName)
                let stack =
                    sample.frames.isEmpty
                    ? missingStackName(sample) : sample.frames.map(analyzed.frameName).joined(separator: "\n")
                let label = sample.captureTimedOut ? "\(verdict.reason) (capture timed out)" : verdict.reason
                events.append(
                    (
                        ChromeTrack.OrderKey(start: at, end: at, layer: 2),
                        "{\"name\": \(JSONOutput.string(label)), \"cat\": \"sample\", \"ph\": \"i\", \"s\": \"t\", "
                            + "\"ts\": \(ts(at)), \(ids), \"sf\": \(frames.id(names[...])), \"args\": {\"stall\": \(stall.id), "
                            + "\"time\": \(ts(sample.time)), \"state\": \"\(sample.state.name)\", "
                            + "\"syscall\": \(JSONOutput.string(sample.syscallName ?? "")), "
                            + "\"category\": \"\(verdict.category.rawValue)\", "
                            + "\"captureTimedOut\": \(sample.captureTimedOut), \"stack\": \(JSONOutput.string(stack))}}"
                    ))
            }
        }
        // Stable: a stall's samples keep their order behind the stall.
        let ordered = events.enumerated().sorted { ($0.element.key, $0.offset) < ($1.element.key, $1.offset) }

        var lines = [
            "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \(ids), \"args\": {\"name\": "
                + "\(JSONOutput.string(header?.processName ?? "process"))}}",
            "{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \(ids), \"args\": {\"name\": \"main\"}}",
        ]
        lines += ordered.map(\.element.text)
        return "{\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"exporter\": "
            + "\(JSONOutput.string("stallwatch \(StallwatchVersion.current)")), \"trace\": "
            + "\(JSONOutput.string(loaded.path))},\n\"traceEvents\": [\n" + lines.joined(separator: ",\n")
            + "\n],\n\"stackFrames\": {\n" + frames.entries.joined(separator: ",\n") + "\n}\n}\n"
    }

    /// Nanoseconds as microseconds with three decimals, exactly (no floating point).
    static func micros(_ nanos: Int64) -> String {
        let magnitude = nanos.magnitude
        let fraction = String(magnitude % 1_000)
        return (nanos < 0 ? "-" : "") + "\(magnitude / 1_000)." + String(repeating: "0", count: 3 - fraction.count)
            + fraction
    }

    /// Nanoseconds as milliseconds with six decimals, exactly.
    static func millis(_ nanos: UInt64) -> String {
        let fraction = String(nanos % 1_000_000)
        return "\(nanos / 1_000_000)." + String(repeating: "0", count: 6 - fraction.count) + fraction
    }

    /// The stall's representative stack (`AnalyzedStall.representative`), one frame a line.
    private static func representativeText(_ analyzed: AnalyzedStall) -> String {
        analyzed.representativeFrames.map(analyzed.frameName).joined(separator: "\n")
    }

    /// Its share of the stall's samples, with four decimals.
    private static func representativeConfidence(_ analyzed: AnalyzedStall) -> String {
        String(format: "%.4f", analyzed.representative?.confidence ?? 0)
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
    private let byStart: [Int]

    init(_ callouts: [CalloutEvent]) {
        self.callouts = callouts
        byStart = callouts.indices.sorted { (callouts[$0].start, $0) < (callouts[$1].start, $1) }
    }

    func callout(of stall: Stall) -> Int? {
        let low = stall.start > Self.tolerance ? stall.start - Self.tolerance : 0
        var position = byStart.partitioningIndex { callouts[$0].start >= low }
        var best: (index: Int, distance: UInt64)?
        while position < byStart.count, callouts[byStart[position]].start <= stall.start &+ Self.tolerance {
            let index = byStart[position]
            position += 1
            let callout = callouts[index]
            guard let site = callout.site, site.file == stall.callout.file, site.line == stall.callout.line,
                site.label == stall.callout.label
            else { continue }
            let distance = callout.start > stall.start ? callout.start - stall.start : stall.start - callout.start
            if best.map({ distance < $0.distance }) ?? true { best = (index, distance) }
        }
        return best?.index
    }
}
