import StallwatchCore

/// The human-readable text of `stallwatch report`.
///
/// Pure; use it on any thread.
package enum ReportText {
    /// `report` as text, 100 columns wide: see `render(_:options:)`.
    package static func render(_ report: StallReport, colour: Bool) -> String {
        render(report, options: TextOptions(colour: colour))
    }

    /// `report` as text: the traces read, an overview (run time, loop utilisation, frames,
    /// hitch ratio, loop latency), stalls by tier and category, congestion, then each listed
    /// signature with its breakdown, reason, posting site, a `stallwatch show` line and its
    /// representative stack with its confidence. Lines fit `options.width` (lists wrap, long
    /// names lose their middle); with `options.colour`, headings are ANSI bold and system
    /// frames dim; with `options.verbose`, frames show their full symbols. Several traces are
    /// summarised (`FleetText`) unless `options.listTraces` asks for a line each.
    package static func render(_ report: StallReport, options: TextOptions) -> String {
        let style = Style(enabled: options.colour)
        let width = options.width.map { max($0, minimumWidth) }
        var lines: [String] = []
        func add(_ items: [String], first: String, continuation: String, separator: String = ", ") {
            lines += wrapItems(items, separator: separator, first: first, continuation: continuation, width: width)
        }
        lines.append(style.bold("Stallwatch report") + " — " + plural(report.traces.count, "trace"))
        let fleet = report.traces.count > 1 || !report.fleet.unreadable.isEmpty
        if fleet { lines += FleetText.summaryLines(report, listed: options.listTraces, width: width) }
        for trace in report.traces where !fleet || options.listTraces {
            let process = trace.process.isEmpty ? "" : " \(trace.process) (pid \(trace.pid))"
            add(
                [
                    "\(trace.path):" + process,
                    "\(trace.mode?.name ?? "unknown") mode", "\(format(trace.runTimeSeconds, 2)) s",
                    plural(trace.stalls, "stall"),
                ], first: "  ", continuation: "    ")
            if !trace.watched.isEmpty {
                let (items, separator) = WatchedText.items(trace.watched)
                add(items, first: "    watched: ", continuation: "      ", separator: separator)
            }
        }
        lines.append("")
        lines.append(style.bold("Overview"))
        let label = "  " + pad("", 18)
        lines.append("  run time          \(format(report.runTimeSeconds, 2)) s")
        if report.stopped.seconds > 0 {
            let only = report.stopped.stalls > 0 ? "; \(plural(report.stopped.stalls, "stall")) only it made long" : ""
            add(
                [
                    "\(format(report.stopped.seconds, 2)) s (SIGSTOP, a debugger)",
                    "left out of run time, stalls and frames\(only)",
                ], first: "  stopped           ", continuation: label)
        }
        if let utilisation = report.loopUtilisation {
            lines.append("  loop utilisation  \(format(utilisation * 100, 1)) %")
        } else {
            lines.append("  loop utilisation  n/a (needs a full-mode trace)")
        }
        if let frames = report.frames {
            add(
                [
                    "\(frames.delivered) of \(frames.expected) delivered", "\(frames.dropped) dropped",
                    "\(format(frames.fps, 1)) fps",
                ], first: "  frames            ", continuation: label)
        }
        lines.append("  hitch ratio       \(format(report.hitchRatioMsPerSecond, 1)) ms/s (\(report.hitchGrade.band))")
        lines.append(
            "  hang rate         \(format(report.hangRateSecondsPerHour, 1)) s/h "
                + "(\(plural(report.stalls.hangs, "hang")), \(format(report.stalls.hangMs, 1)) ms)")
        if let latency = report.loopLatency {
            add(
                [
                    "p50 \(format(latency.p50Ms, 3)) ms", "p90 \(format(latency.p90Ms, 3)) ms",
                    "p99 \(format(latency.p99Ms, 3)) ms", "p99.9 \(format(latency.p999Ms, 3)) ms",
                    "max \(format(latency.maxMs, 3)) ms (\(plural(Int(latency.count), "sample")))",
                ], first: "  loop latency      ", continuation: label)
        }
        lines.append("")
        let stalls = report.stalls
        let unfinished = stalls.unfinished > 0 ? ", \(stalls.unfinished) unfinished" : ""
        lines.append(style.bold("Stalls") + ": \(stalls.total), \(format(stalls.totalMs, 1)) ms in all\(unfinished)")
        add(
            Tier.allCases.map { "\($0.rawValue) \(stalls.byTier[$0] ?? 0)" }, first: "  by tier      ",
            continuation: "               ")
        var categories = StallCategory.allCases.map {
            "\($0.rawValue) \(stalls.byCategory[$0] ?? 0) (\(format(stalls.categoryMs[$0] ?? 0, 1)) ms)"
        }
        if stalls.unsampledMs > 0 { categories.append("no samples \(format(stalls.unsampledMs, 1)) ms") }
        add(categories, first: "  by category  ", continuation: "               ")
        if report.expected.stalls > 0 {
            lines.append(
                "  expected     \(plural(report.expected.stalls, "stall")) (\(format(report.expected.ms, 1)) ms) "
                    + "the app marked as long on purpose, not counted above")
        }
        if let key = report.groups.first?.key {
            if report.groups.allSatisfy({ $0.value == FleetTally.noValue }) {
                add(
                    [
                        "no stall has the app-state key '\(key)'",
                        "(AppState.set never gave it a value while a stall was detected)",
                    ], first: "  by \(key)  ", continuation: "    ")
            } else {
                // Values are the app's: a long one is cut to leave room for its figures.
                let room = max(16, (width ?? 100) - 36)
                let shown = report.groups.map {
                    $0.value.count > room ? String($0.value.prefix(room - 1)) + "…" : $0.value
                }
                let column = shown.map(\.count).max() ?? 0
                lines.append("  by \(key)")
                for (group, value) in zip(report.groups, shown) {
                    let padded = pad(value, column)
                    lines.append("    \(padded)  \(plural(group.stalls, "stall")), \(format(group.ms, 1)) ms")
                }
            }
        }
        if let congestion = report.congestion {
            lines.append("")
            lines += CongestionText.lines(congestion, style: style, width: width)
        }
        lines.append("")
        if report.signatures.isEmpty {
            lines.append(style.bold("Top signatures") + ": none")
        } else {
            lines.append(
                style.bold("Top signatures")
                    + " (\(report.signatures.count) of \(report.signatureCount), by total time)")
        }
        for (index, signature) in report.signatures.enumerated() {
            lines.append("")
            lines += signatureLines(signature, rank: index + 1, style: style, width: width, verbose: options.verbose)
            if fleet { lines += FleetText.signatureLines(signature, traceCount: report.traces.count, width: width) }
        }
        return terminalText(lines, style: style)
    }

    static func signatureLines(
        _ signature: StallReport.Signature, rank: Int, style: Style, width: Int?, verbose: Bool
    ) -> [String] {
        var lines: [String] = []
        let rankText = "\(rank). "
        let title = wrapItems(
            signature.frames, separator: " ← ", first: rankText + "\(signature.category.rawValue): ",
            continuation: String(repeating: " ", count: rankText.count + 2), width: width)
        lines += title.map { style.bold($0) }
        let tiers = Tier.allCases.compactMap { tier in signature.tiers[tier].map { "\($0) \(tier.rawValue)" } }
        lines += wrapItems(
            [
                "\(plural(signature.count, "stall")) (\(tiers.joined(separator: ", ")))",
                "total \(format(signature.totalMs, 1)) ms", "max \(format(signature.maxMs, 1)) ms",
            ], separator: ", ", first: "   ", continuation: "     ", width: width)
        if let fixed = signature.ifFixed {
            var figures = [
                "hitch ratio \(format(fixed.hitchRatioMsPerSecond, 1)) ms/s (\(fixed.hitchGrade.rawValue))",
                "hang rate \(format(fixed.hangRateSecondsPerHour, 1)) s/h",
            ]
            if let dropped = fixed.droppedFrames, let fps = fixed.fps {
                figures += ["\(dropped) dropped frames", "\(format(fps, 1)) fps"]
            }
            lines += wrapItems(figures, separator: ", ", first: "   if fixed: ", continuation: "     ", width: width)
        }
        let shares = StallCategory.allCases.compactMap { category -> String? in
            let share = signature.categoryShares[category] ?? 0
            // A share that rounds to 0 % is left out, not shown as "0 %".
            return share >= 0.005 ? "\(category.rawValue) \(format(share * 100, 0)) %" : nil
        }
        if !shares.isEmpty { lines.append("   breakdown: " + shares.joined(separator: ", ")) }
        if !signature.reason.isEmpty {
            lines.append(elideMiddle("   reason: \(SwiftNames.simplify(signature.reason))", width))
        }
        for wait in (signature.waits ?? []).prefix(2) {
            lines.append(elideMiddle("   waited on \(wait.text) (\(format(wait.share * 100, 0)) % of samples)", width))
        }
        if let executors = signature.executors {
            let items = executors.map { $0.count == signature.count ? $0.executor : "\($0.executor) ×\($0.count)" }
            lines += wrapItems(items, separator: ", ", first: "   on ", continuation: "      ", width: width)
        }
        let others = signature.sites.count - 1
        let more = others > 0 ? " (and \(others) more \(others == 1 ? "site" : "sites"))" : ""
        lines.append(elideMiddle("   posted at \(signature.site)", width.map { $0 - more.count }) + more)
        // A command to copy stays whole; it moves to a line of its own when it does not fit.
        let command = "stallwatch show \(signature.example.trace) --stall \(signature.example.stall)"
        if let width, "   example: \(command)".count > width {
            lines.append("   example:")
            lines.append("     " + command)
        } else {
            lines.append("   example: \(command)")
        }
        guard !signature.stack.isEmpty else { return lines }
        lines.append(
            "   stack (\(format(signature.stackConfidence * 100, 0)) % of the longest stall's time"
                + " had this stack):")
        for frame in signature.stack.prefix(12) {
            let text = frameLine(
                indent: "     ", name: verbose ? frame.symbol : frame.name, source: frame.source, module: nil,
                width: width)
            lines.append(frame.system ? style.dim(text) : text)
        }
        if signature.stack.count > 12 { lines.append("     … \(signature.stack.count - 12) more frames") }
        return lines
    }

    /// `indent name (source)  module` in `width` columns: the name loses its middle first
    /// (down to 24 columns), then the source and module theirs.
    static func frameLine(indent: String, name: String, source: String?, module: String?, width: Int?) -> String {
        let sourceText = source.map { " (\($0))" } ?? ""
        let moduleText = module.map { "  \($0)" } ?? ""
        let full = indent + name + sourceText + moduleText
        guard let width, full.count > width else { return full }
        let rest = sourceText.count + moduleText.count
        let nameRoom = width - indent.count - rest
        if nameRoom >= 24 { return indent + elideMiddle(name, nameRoom) + sourceText + moduleText }
        let shortName = elideMiddle(name, min(name.count, 24))
        return elideMiddle(indent + shortName + sourceText + moduleText, width)
    }
}
