import StallwatchCore

/// OpenTelemetry: an OTLP `ExportTraceServiceRequest` in the OTLP/JSON encoding (what an
/// OTLP/HTTP collector takes at `/v1/traces` with `Content-Type: application/json`): one
/// `ResourceSpans` per trace (resource attributes `service.name`, `service.version`,
/// `host.name`, `process.pid`, `process.executable.path`, `stallwatch.build_id`), one span per
/// stall and, optionally, one per callout of a `full`-mode trace. As OTLP/JSON requires (and
/// unlike the plain protobuf JSON mapping), trace and span ids are lowercase hex, enums are
/// numbers and 64-bit integers are decimal strings.
///
/// Pure; use it on any thread.
package enum OTLPJSONExporter {
    /// The instrumentation scope every span comes from.
    package static let scopeName = "stallwatch"
    /// The scope's version: this exporter's attribute set.
    package static let scopeVersion = "1"

    /// The request for `inputs` (traces with their analyzed stalls); with `callouts`, also a
    /// span per callout of traces loaded with `includeCallouts`.
    package static func export(_ inputs: [JSONLinesExporter.Input], callouts: Bool = false) -> String {
        var text = ""
        write(inputs, callouts: callouts, to: &text)
        return text
    }

    /// `export(_:callouts:)` written to `out` span by span.
    package static func write(
        _ inputs: [JSONLinesExporter.Input], callouts: Bool = false, to out: inout some TextOutputStream
    ) {
        out.write("{\"resourceSpans\":[")
        for (position, input) in inputs.enumerated() {
            let facts = TraceFacts(input.trace)
            out.write(
                (position == 0 ? "" : ",\n") + "{\"resource\":{\"attributes\":["
                    + resourceAttributes(input.trace, facts, rates: RunRates(input.trace, stalls: input.stalls))
                    .joined(separator: ",")
                    + "]},\"scopeSpans\":[")
            out.write(
                "{\"scope\":{\"name\":\(JSONOutput.string(scopeName)),\"version\":\(JSONOutput.string(scopeVersion))},"
                    + "\"spans\":[")
            var first = true
            for analyzed in input.stalls {
                out.write((first ? "" : ",") + stallSpan(analyzed, facts: facts))
                first = false
            }
            if callouts {
                for (index, callout) in input.trace.callouts.enumerated() {
                    out.write((first ? "" : ",") + calloutSpan(callout, index: index, facts: facts))
                    first = false
                }
            }
            out.write("]}]}")
        }
        out.write("]}\n")
    }

    /// What the resource (one recorded process run) is: service, host, process, build, trace,
    /// and its run time, hang rate and hitch ratio.
    static func resourceAttributes(_ trace: LoadedTrace, _ facts: TraceFacts, rates: RunRates) -> [String] {
        let header = trace.trace.header
        var attributes = [attribute("service.name", string: header?.processName ?? "unknown")]
        if let version = facts.appVersion { attributes.append(attribute("service.version", string: version)) }
        if let host = facts.host { attributes.append(attribute("host.name", string: host)) }
        if let pid = header?.pid { attributes.append(attribute("process.pid", int: Int64(pid))) }
        if let executable = trace.trace.origin?.executable, !executable.isEmpty {
            attributes.append(attribute("process.executable.path", string: executable))
        }
        if let build = facts.buildID { attributes.append(attribute("stallwatch.build_id", string: build)) }
        attributes.append(attribute("stallwatch.build", string: facts.build))
        attributes.append(attribute("stallwatch.trace_path", string: trace.path))
        attributes.append(attribute("stallwatch.run_time_ns", int: Int64(clamping: rates.runNanos)))
        attributes.append(attribute("stallwatch.hang_rate_s_per_hour", double: rates.hangRateSecondsPerHour))
        attributes.append(attribute("stallwatch.hitch_ratio_ms_per_s", double: rates.hitchRatioMsPerSecond))
        return attributes
    }

    static func stallSpan(_ analyzed: AnalyzedStall, facts: TraceFacts) -> String {
        let stall = analyzed.stall
        let start = facts.wallClock(stall.start) ?? stall.start
        let end = start &+ analyzed.durationNanos
        var attributes = [
            attribute("stallwatch.category", string: analyzed.category.rawValue),
            attribute("stallwatch.tier", string: stall.tier.rawValue),
            attribute("stallwatch.signature", string: analyzed.key.text),
            attribute("stallwatch.site", string: analyzed.site),
            attribute("code.filepath", string: stall.callout.file),
            attribute("code.lineno", int: Int64(stall.callout.line)),
            attribute("stallwatch.stall_id", int: Int64(truncatingIfNeeded: stall.id)),
            attribute("stallwatch.duration_ms", double: Double(analyzed.durationNanos) / 1e6),
            attribute("stallwatch.unfinished", bool: stall.flags.contains(.unfinished)),
        ]
        if let reason = analyzed.breakdown.topReasons.first(where: { $0.category == analyzed.category })?.reason {
            attributes.append(attribute("stallwatch.reason", string: reason))
        }
        if let label = stall.callout.label { attributes.append(attribute("stallwatch.site_label", string: label)) }
        // How the work was timed: a MainLoop mode, `heartbeat`, or an event loop's wait.
        attributes.append(attribute("stallwatch.site_mode", string: stall.callout.mode))
        for category in StallCategory.allCases {
            attributes.append(
                attribute("stallwatch.breakdown.\(category.rawValue)", double: analyzed.breakdown.share(of: category)))
        }
        attributes.append(attribute("stallwatch.stack", strings: analyzed.representativeNames))
        attributes.append(
            attribute("stallwatch.stack_confidence", double: analyzed.representative?.confidence ?? 0))
        if let wait = WaitSummary.top([stall], limit: 1).first {
            attributes.append(attribute("stallwatch.wait", string: wait.text))
            attributes.append(attribute("stallwatch.wait_share", double: wait.share))
        }
        if let expected = stall.expected { attributes.append(attribute("stallwatch.expected", string: expected)) }
        // The app's state, one attribute per key (`stallwatch.app.screen` = "Feed").
        for (key, value) in stall.context.sorted(by: { $0.key < $1.key }) {
            attributes.append(attribute("stallwatch.app.\(key)", string: value))
        }
        return span(
            traceID: facts.traceID, spanID: spanID(facts.traceID, 1, stall.id),
            name: "stall \(analyzed.category.rawValue)", start: start, end: end, attributes: attributes,
            error: stall.tier >= .hang)
    }

    static func calloutSpan(_ callout: CalloutEvent, index: Int, facts: TraceFacts) -> String {
        let start = facts.wallClock(callout.start) ?? callout.start
        let site = callout.site.map { "\($0.file):\($0.line)" } ?? "?"
        var attributes = [
            attribute("stallwatch.site", string: site), attribute("stallwatch.mode", string: callout.mode),
        ]
        if let site = callout.site {
            attributes.append(attribute("stallwatch.callout_kind", string: "\(site.kind)"))
            if let label = site.label { attributes.append(attribute("stallwatch.site_label", string: label)) }
        }
        return span(
            traceID: facts.traceID, spanID: spanID(facts.traceID, 2, UInt64(index)),
            name: "callout " + (callout.site?.label ?? site), start: start, end: start &+ callout.duration,
            attributes: attributes, error: false)
    }

    static func span(
        traceID: String, spanID: String, name: String, start: UInt64, end: UInt64, attributes: [String], error: Bool
    ) -> String {
        // SPAN_KIND_INTERNAL = 1; STATUS_CODE_ERROR = 2 for hangs (≥ 250 ms by default), else unset.
        let status = error ? "{\"code\":2,\"message\":\"hang\"}" : "{}"
        return "{\"traceId\":\"\(traceID)\",\"spanId\":\"\(spanID)\",\"name\":\(JSONOutput.string(name)),"
            + "\"kind\":1,\"startTimeUnixNano\":\"\(start)\",\"endTimeUnixNano\":\"\(end)\","
            + "\"attributes\":[" + attributes.joined(separator: ",") + "],\"status\":\(status)}"
    }

    /// 8 bytes, never all zero (an invalid span id), from the trace id, a kind and an index.
    static func spanID(_ traceID: String, _ kind: UInt64, _ index: UInt64) -> String {
        var hash = FNV1a.hash(traceID.utf8, seed: FNV1a.offsetBasis ^ kind)
        hash ^= index &* 0x9E37_79B9_7F4A_7C15
        hash = (hash ^ (hash >> 31)) &* 0xBF58_476D_1CE4_E5B9
        hash ^= hash >> 29
        if hash == 0 { hash = 1 }
        return hex((0..<8).map { UInt8(truncatingIfNeeded: hash >> (56 - 8 * UInt64($0))) })
    }

    static func attribute(_ key: String, string: String) -> String {
        "{\"key\":\(JSONOutput.string(key)),\"value\":{\"stringValue\":\(JSONOutput.string(string))}}"
    }

    static func attribute(_ key: String, int: Int64) -> String {
        "{\"key\":\(JSONOutput.string(key)),\"value\":{\"intValue\":\"\(int)\"}}"
    }

    static func attribute(_ key: String, double: Double) -> String {
        "{\"key\":\(JSONOutput.string(key)),\"value\":{\"doubleValue\":\(format(double, 6))}}"
    }

    static func attribute(_ key: String, bool: Bool) -> String {
        "{\"key\":\(JSONOutput.string(key)),\"value\":{\"boolValue\":\(bool)}}"
    }

    static func attribute(_ key: String, strings: [String]) -> String {
        let values = strings.map { "{\"stringValue\":\(JSONOutput.string($0))}" }.joined(separator: ",")
        return "{\"key\":\(JSONOutput.string(key)),\"value\":{\"arrayValue\":{\"values\":[\(values)]}}}"
    }
}
