import StallwatchCore

/// The Chrome trace event format (JSON object form), which Perfetto UI and chrome://tracing
/// open: stalls are complete (`X`) events on the main thread's track, samples are
/// thread-scoped instant (`i`) events whose `sf` points into `stackFrames`, and in `full`
/// mode every callout is an `X` event too. Timestamps are microseconds from the trace's start.
///
/// Pure; use it on any thread.
public enum ChromeTraceExporter {
    /// `loaded` as Chrome trace JSON. `stalls` are its stalls as `ReportBuilder.analyze(_:)`
    /// classified them; its callouts are drawn only if it was loaded with `includeCallouts`.
    public static func export(_ loaded: LoadedTrace, stalls: [AnalyzedStall]) -> String {
        let header = loaded.trace.header
        let pid = Int(header?.pid ?? 1)
        let origin = header?.clockBase ?? stalls.map(\.stall.start).min() ?? 0
        func ts(_ time: UInt64) -> String {
            let nanos = Int64(bitPattern: time &- origin)
            return format(Double(nanos) / 1_000, 3)
        }
        func micros(_ nanos: UInt64) -> String { format(Double(nanos) / 1_000, 3) }
        let ids = "\"pid\": \(pid), \"tid\": \(pid)"
        var events: [String] = []
        events.append(
            "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \(ids), \"args\": {\"name\": "
                + "\(JSONOutput.string(header?.processName ?? "process"))}}")
        events.append("{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \(ids), \"args\": {\"name\": \"main\"}}")

        for callout in loaded.callouts {
            let site = callout.site
            let name = site?.label ?? site.map { "\($0.kind) \($0.file):\($0.line)" } ?? "callout"
            let siteText = site.map { "\($0.file):\($0.line)" } ?? "?"
            events.append(
                "{\"name\": \(JSONOutput.string(name)), \"cat\": \"callout\", \"ph\": \"X\", \"ts\": \(ts(callout.start)), "
                    + "\"dur\": \(micros(callout.duration)), \(ids), \"args\": {\"site\": \(JSONOutput.string(siteText)), "
                    + "\"mode\": \(JSONOutput.string(callout.mode))}}")
        }

        var stackFrames: [String] = []
        var frameIDs: [StackKey: Int] = [:]
        func frameID(_ names: ArraySlice<String>) -> Int {
            let key = StackKey(names: Array(names))
            if let known = frameIDs[key] { return known }
            let parent = names.count > 1 ? frameID(names.dropLast()) : nil
            let id = frameIDs.count + 1
            frameIDs[key] = id
            stackFrames.append(
                "\"\(id)\": {\"name\": \(JSONOutput.string(names.last!))"
                    + (parent.map { ", \"parent\": \"\($0)\"" } ?? "") + "}")
            return id
        }

        for analyzed in stalls {
            let stall = analyzed.stall
            let name = "\(stall.tier.rawValue) \(analyzed.category.rawValue): \(analyzed.site)"
            events.append(
                "{\"name\": \(JSONOutput.string(name)), \"cat\": \"stall\", \"ph\": \"X\", \"ts\": \(ts(stall.start)), "
                    + "\"dur\": \(micros(analyzed.durationNanos)), \(ids), \"args\": {\"id\": \(stall.id), "
                    + "\"tier\": \"\(stall.tier.rawValue)\", \"category\": \"\(analyzed.category.rawValue)\", "
                    + "\"signature\": \(JSONOutput.string(analyzed.key.text)), \"site\": \(JSONOutput.string(analyzed.site)), "
                    + "\"label\": \(JSONOutput.string(stall.callout.label ?? "")), \"mode\": \(JSONOutput.string(stall.callout.mode)), "
                    + "\"unfinished\": \(stall.end == nil), \"stackConfidence\": \(representativeConfidence(analyzed)), "
                    + "\"representativeStack\": \(JSONOutput.string(representativeText(analyzed)))}}")
            for (index, sample) in stall.samples.enumerated() {
                let verdict = analyzed.classifications[index]
                let names = sample.frames.reversed().map(analyzed.frameName)
                let sf = names.isEmpty ? "" : ", \"sf\": \(frameID(names[...]))"
                let stackText = sample.frames.map(analyzed.frameName).joined(separator: "\n")
                events.append(
                    "{\"name\": \(JSONOutput.string(verdict.reason)), \"cat\": \"sample\", \"ph\": \"i\", \"s\": \"t\", "
                        + "\"ts\": \(ts(sample.time)), \(ids)\(sf), \"args\": {\"stall\": \(stall.id), "
                        + "\"state\": \"\(sample.state.name)\", \"syscall\": \(JSONOutput.string(sample.syscallName ?? "")), "
                        + "\"category\": \"\(verdict.category.rawValue)\", "
                        + "\"stack\": \(JSONOutput.string(stackText))}}")
            }
        }
        return "{\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"exporter\": \"stallwatch\", \"trace\": "
            + "\(JSONOutput.string(loaded.path))},\n\"traceEvents\": [\n" + events.joined(separator: ",\n")
            + "\n],\n\"stackFrames\": {\n" + stackFrames.joined(separator: ",\n") + "\n}\n}\n"
    }

    /// The stall's representative stack (`AnalyzedStall.representative`), one frame a line.
    private static func representativeText(_ analyzed: AnalyzedStall) -> String {
        analyzed.representativeFrames.map(analyzed.frameName).joined(separator: "\n")
    }

    private static func representativeConfidence(_ analyzed: AnalyzedStall) -> String {
        format(analyzed.representative?.confidence ?? 0, 4)
    }

    private struct StackKey: Hashable {
        var names: [String]
    }
}
