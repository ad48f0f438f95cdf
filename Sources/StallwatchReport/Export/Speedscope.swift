import StallwatchCore

/// speedscope's file format (https://www.speedscope.app/file-format-schema.json): one
/// `sampled` profile of the main thread's stall samples, each stack rooted at the sample's
/// category, weights in microseconds. A stall without samples is one stack of its category
/// and a `[no samples]` (or `[unfinished stall, no samples]`) frame, as in the folded export.
/// `exporter` names the Stallwatch version that wrote the file.
///
/// Pure; use it on any thread.
package enum SpeedscopeExporter {
    /// The speedscope JSON of `stalls` (from `ReportBuilder.analyze(_:)`); `name` titles the
    /// file in speedscope (the CLI uses the trace's path); `traces` (the stalls' traces) say
    /// how far an unfinished stall without samples reaches.
    package static func export(_ stalls: [AnalyzedStall], name: String, traces: [LoadedTrace] = []) -> String {
        var frameIndex: [FrameKey: Int] = [:]
        var frames: [FrameKey] = []
        func index(_ key: FrameKey) -> Int {
            if let known = frameIndex[key] { return known }
            frameIndex[key] = frames.count
            frames.append(key)
            return frames.count - 1
        }
        var samples: [[Int]] = []
        var weights: [UInt64] = []
        let extents = StallExtents(stalls, traces: traces)
        for analyzed in stalls {
            if analyzed.stall.samples.isEmpty {
                samples.append([
                    index(FrameKey(name: analyzed.category.rawValue)),
                    index(FrameKey(name: noSamplesName(analyzed.stall))),
                ])
                weights.append(max(1, (extents.end(of: analyzed) - analyzed.stall.start + 500) / 1_000))
                continue
            }
            let sampleWeights = analyzed.sampleWeights
            for (position, sample) in analyzed.stall.samples.enumerated() where sampleWeights[position] >= 500 {
                var stack = [index(FrameKey(name: analyzed.classifications[position].category.rawValue))]
                for frame in sample.frames.reversed() {
                    stack.append(
                        index(
                            FrameKey(
                                name: analyzed.frameName(frame), file: analyzed.names.path(frame.file ?? ""),
                                line: frame.line)))
                }
                if sample.frames.isEmpty { stack.append(index(FrameKey(name: missingStackName(sample)))) }
                samples.append(stack)
                weights.append((sampleWeights[position] + 500) / 1_000)
            }
        }
        let total = weights.reduce(0, +)
        var json = "{\n"
        json += "  \"$schema\": \"https://www.speedscope.app/file-format-schema.json\",\n"
        json += "  \"exporter\": \(JSONOutput.string("stallwatch \(StallwatchVersion.current)")),\n"
        json += "  \"name\": \(JSONOutput.string(name)),\n"
        json += "  \"activeProfileIndex\": 0,\n"
        json += "  \"shared\": {\n    \"frames\": [\n"
        json += frames.map { frame in
            var fields = ["\"name\": \(JSONOutput.string(frame.name))"]
            if let file = frame.file { fields.append("\"file\": \(JSONOutput.string(file))") }
            if let line = frame.line { fields.append("\"line\": \(line)") }
            return "      {" + fields.joined(separator: ", ") + "}"
        }.joined(separator: ",\n")
        json += "\n    ]\n  },\n"
        json += "  \"profiles\": [\n    {\n"
        json += "      \"type\": \"sampled\",\n"
        json += "      \"name\": \(JSONOutput.string("main thread stalls")),\n"
        json += "      \"unit\": \"microseconds\",\n"
        json += "      \"startValue\": 0,\n"
        json += "      \"endValue\": \(total),\n"
        json +=
            "      \"samples\": ["
            + samples.map { "[" + $0.map(String.init).joined(separator: ",") + "]" }
            .joined(separator: ", ") + "],\n"
        json += "      \"weights\": [" + weights.map(String.init).joined(separator: ", ") + "]\n"
        json += "    }\n  ]\n}\n"
        return json
    }

    private struct FrameKey: Hashable {
        var name: String
        var file: String?
        var line: UInt32?
    }
}
