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
        var text = ""
        write(stalls, name: name, traces: traces, to: &text)
        return text
    }

    /// `export(_:name:traces:)` written to `out` piece by piece.
    package static func write(
        _ stalls: [AnalyzedStall], name: String, traces: [LoadedTrace] = [], to out: inout some TextOutputStream
    ) {
        var frameIndex: [FrameKey: Int] = [:]
        var frames: [FrameKey] = []
        func index(_ key: FrameKey) -> Int {
            if let known = frameIndex[key] { return known }
            frameIndex[key] = frames.count
            frames.append(key)
            return frames.count - 1
        }
        // Each sample's stack as its JSON array of frame indices (one string per distinct stack).
        var samples: [String] = []
        var stacks: [SampleStackKey: String] = [:]
        var weights: [UInt64] = []
        for analyzed in stalls {
            if analyzed.stall.samples.isEmpty {
                samples.append(
                    text([
                        index(FrameKey(name: analyzed.category.rawValue)),
                        index(FrameKey(name: noSamplesName(analyzed.stall))),
                    ]))
                weights.append(max(1, (analyzed.drawnEnd - analyzed.stall.start + 500) / 1_000))
                continue
            }
            let sampleWeights = analyzed.sampleWeights
            for (position, sample) in analyzed.stall.samples.enumerated() where sampleWeights[position] >= 500 {
                let category = analyzed.classifications[position].category
                let key = SampleStackKey(analyzed, sample: position, category: category)
                if let known = stacks[key] {
                    samples.append(known)
                } else {
                    // Each distinct stack's frames made once.
                    var stack = [index(FrameKey(name: category.rawValue))]
                    let names = analyzed.frameNames(ofSample: position)
                    for (frame, name) in zip(sample.frames, names).reversed() {
                        stack.append(
                            index(FrameKey(name: name, file: analyzed.names.path(frame.file ?? ""), line: frame.line)))
                    }
                    if sample.frames.isEmpty { stack.append(index(FrameKey(name: missingStackName(sample)))) }
                    let made = text(stack)
                    stacks[key] = made
                    samples.append(made)
                }
                weights.append((sampleWeights[position] + 500) / 1_000)
            }
        }
        let total = weights.reduce(0, +)
        out.write("{\n")
        out.write("  \"$schema\": \"https://www.speedscope.app/file-format-schema.json\",\n")
        out.write("  \"exporter\": \(JSONOutput.string("stallwatch \(StallwatchVersion.current)")),\n")
        out.write("  \"name\": \(JSONOutput.string(name)),\n")
        out.write("  \"activeProfileIndex\": 0,\n")
        out.write("  \"shared\": {\n    \"frames\": [\n")
        for (position, frame) in frames.enumerated() {
            var fields = ["\"name\": \(JSONOutput.string(frame.name))"]
            if let file = frame.file { fields.append("\"file\": \(JSONOutput.string(file))") }
            if let line = frame.line { fields.append("\"line\": \(line)") }
            out.write((position == 0 ? "" : ",\n") + "      {" + fields.joined(separator: ", ") + "}")
        }
        out.write("\n    ]\n  },\n")
        out.write("  \"profiles\": [\n    {\n")
        out.write("      \"type\": \"sampled\",\n")
        out.write("      \"name\": \(JSONOutput.string("main thread stalls")),\n")
        out.write("      \"unit\": \"microseconds\",\n")
        out.write("      \"startValue\": 0,\n")
        out.write("      \"endValue\": \(total),\n")
        out.write("      \"samples\": [")
        for (position, sample) in samples.enumerated() { out.write(position == 0 ? sample : ", " + sample) }
        out.write("],\n")
        out.write("      \"weights\": [")
        for (position, weight) in weights.enumerated() { out.write(position == 0 ? "\(weight)" : ", \(weight)") }
        out.write("]\n")
        out.write("    }\n  ]\n}\n")
    }

    /// `[1,2,3]`.
    private static func text(_ stack: [Int]) -> String {
        "[" + stack.map(String.init).joined(separator: ",") + "]"
    }

    private struct FrameKey: Hashable {
        var name: String
        var file: String?
        var line: UInt32?
    }
}
