import StallwatchAnalysis
import StallwatchCore

/// JSON Lines for distributed engines (Spark, DuckDB, ClickHouse, BigQuery…): one JSON object
/// per line, one per stall and, optionally, one per sample. Flat, `snake_case` keys of fixed
/// types so that every engine infers the same columns; unknown values are `null`. Versioned by
/// `schema` (`stallwatch.jsonl/1`): within a version keys may be added, none removed or
/// changed. The schema is documented in `docs/fleet.md`; `tools/fleet/` holds the Spark job
/// and SQL that rebuild `stallwatch report`'s signature table from these lines.
///
/// Pure; use it on any thread.
package enum JSONLinesExporter {
    /// The value of every line's `schema` key.
    package static let schema = "stallwatch.jsonl/1"

    /// One trace's stalls (from `ReportBuilder.analyze(_:)`) with the trace they came from.
    package struct Input: Sendable {
        /// The trace.
        package var trace: LoadedTrace
        /// Its analyzed stalls.
        package var stalls: [AnalyzedStall]

        /// Pairs a trace with its stalls.
        package init(trace: LoadedTrace, stalls: [AnalyzedStall]) {
            self.trace = trace
            self.stalls = stalls
        }
    }

    /// The lines of `inputs`, traces in order, stalls in start order, each stall's samples
    /// (with `samples`) right after it. Ends in a newline unless empty.
    package static func export(_ inputs: [Input], samples: Bool = false) -> String {
        var text = ""
        write(inputs, samples: samples, to: &text)
        return text
    }

    /// `export(_:samples:)` written to `out` line by line.
    package static func write(_ inputs: [Input], samples: Bool = false, to out: inout some TextOutputStream) {
        var stacks: [SampleStackKey: String] = [:]
        for input in inputs {
            let facts = TraceFacts(input.trace)
            let common = commonFields(input.trace, facts, rates: RunRates(input.trace, stalls: input.stalls))
            for analyzed in input.stalls {
                out.write(stallLine(analyzed, facts: facts, common: common))
                if samples { writeSampleLines(analyzed, facts: facts, common: common, stacks: &stacks, to: &out) }
            }
        }
    }

    /// The trace's keys every line repeats (engines need no join), its run time and hang time
    /// among them (so a query can sum them per trace and divide, as `report` does).
    static func commonFields(_ trace: LoadedTrace, _ facts: TraceFacts, rates: RunRates) -> String {
        let header = trace.trace.header
        var fields = JSONWriter()
        fields.add("schema", schema)
        fields.add("trace_id", facts.traceID)
        fields.add("trace_path", trace.path)
        fields.add("host", facts.host)
        fields.add("process", header?.processName)
        fields.add("pid", header.map { UInt64($0.pid) })
        fields.add("build", facts.build)
        fields.add("build_id", facts.buildID)
        fields.add("app_version", facts.appVersion)
        fields.add("trace_run_time_ns", rates.runNanos)
        fields.add("trace_hang_ns", rates.hangNanos)
        fields.add("trace_hang_rate_s_per_hour", raw: format(rates.hangRateSecondsPerHour, 3))
        fields.add("trace_hitch_ratio_ms_per_s", raw: format(rates.hitchRatioMsPerSecond, 3))
        return fields.text
    }

    static func stallLine(_ analyzed: AnalyzedStall, facts: TraceFacts, common: String) -> String {
        let stall = analyzed.stall
        var fields = JSONWriter(common)
        fields.add("type", "stall")
        fields.add("stall_id", stall.id)
        fields.add("start_unix_nano", facts.wallClock(stall.start))
        fields.add("start", facts.wallClock(stall.start).map(isoTime))
        fields.add("duration_ns", analyzed.durationNanos)
        fields.add("duration_ms", raw: format(Double(analyzed.durationNanos) / 1e6, 3))
        fields.add("unfinished", stall.flags.contains(.unfinished))
        fields.add("tier", stall.tier.rawValue)
        fields.add("category", analyzed.category.rawValue)
        let reason = analyzed.breakdown.topReasons.first { $0.category == analyzed.category }?.reason
        fields.add("reason", reason)
        for category in StallCategory.allCases {
            let key = "share_" + splittingCamelCase(category.rawValue, separator: "_")
            fields.add(key, raw: format(analyzed.breakdown.share(of: category), 4))
        }
        fields.add("signature", analyzed.key.text)
        fields.add("signature_frames", analyzed.key.frames)
        fields.add("stack", analyzed.representativeNames)
        fields.add("stack_confidence", raw: format(analyzed.representative?.confidence ?? 0, 4))
        fields.add("site", analyzed.site)
        fields.add("site_label", stall.callout.label)
        fields.add("site_mode", stall.callout.mode)
        fields.add("sample_count", UInt64(stall.samples.count))
        let wait = WaitSummary.top([stall], limit: 1).first
        fields.add("wait", wait?.text)
        fields.add("wait_share", raw: format(wait?.share ?? 0, 4))
        fields.add("expected", stall.expected)
        fields.add("app_state", stall.context.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })
        return fields.line
    }

    /// One line per sample of `analyzed`; `stacks` holds each distinct stack's JSON array of
    /// names, made once.
    static func writeSampleLines(
        _ analyzed: AnalyzedStall, facts: TraceFacts, common: String, stacks: inout [SampleStackKey: String],
        to out: inout some TextOutputStream
    ) {
        let weights = analyzed.sampleWeights
        for (index, sample) in analyzed.stall.samples.enumerated() {
            var fields = JSONWriter(common)
            fields.add("type", "sample")
            fields.add("stall_id", analyzed.stall.id)
            fields.add("sample_index", UInt64(index))
            fields.add("tid", UInt64(UInt32(bitPattern: sample.tid)))
            fields.add("time_unix_nano", facts.wallClock(sample.time))
            fields.add("offset_ns", sample.time >= analyzed.stall.start ? sample.time - analyzed.stall.start : 0)
            fields.add("weight_ns", weights[index])
            fields.add("category", analyzed.classifications[index].category.rawValue)
            fields.add("reason", analyzed.classifications[index].reason)
            fields.add("state", sample.state.name)
            fields.add("syscall", sample.syscallName)
            let key = SampleStackKey(analyzed, sample: index, category: nil)
            if stacks[key] == nil { stacks[key] = JSONWriter.array(analyzed.frameNames(ofSample: index)) }
            fields.add("stack", raw: stacks[key]!)
            fields.add("wait", sample.wait?.summary)
            out.write(fields.line)
        }
    }
}
