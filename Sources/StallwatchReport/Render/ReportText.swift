import StallwatchCore

/// The human-readable text of `stallwatch report`.
///
/// Pure; use it on any thread.
public enum ReportText {
    /// `report` as text: the traces read, an overview (run time, loop utilisation, frames,
    /// hitch ratio, loop latency), stalls by tier and category, then each listed signature
    /// with its breakdown, reason, posting site, a `stallwatch show` line and its stack.
    /// With `colour`, headings are ANSI bold and system frames dim.
    /// Several traces are summarised (`FleetText`) unless `listTraces` asks for a line each.
    public static func render(_ report: StallReport, colour: Bool, listTraces: Bool = false) -> String {
        let style = Style(enabled: colour)
        var lines: [String] = []
        let traceWord = report.traces.count == 1 ? "trace" : "traces"
        lines.append(style.bold("Stallwatch report") + " — \(report.traces.count) \(traceWord)")
        let fleet = report.traces.count > 1 || !report.fleet.unreadable.isEmpty
        if fleet { lines += FleetText.summaryLines(report, listed: listTraces) }
        for trace in report.traces where !fleet || listTraces {
            let process = trace.process.isEmpty ? "" : " \(trace.process) (pid \(trace.pid))"
            lines.append(
                "  \(trace.path):\(process), \(trace.mode?.name ?? "unknown") mode, \(format(trace.runTimeSeconds, 2)) s, "
                    + plural(trace.stalls, "stall"))
        }
        lines.append("")
        lines.append(style.bold("Overview"))
        lines.append("  run time          \(format(report.runTimeSeconds, 2)) s")
        if let utilisation = report.loopUtilisation {
            lines.append("  loop utilisation  \(format(utilisation * 100, 1)) %")
        } else {
            lines.append("  loop utilisation  n/a (needs a full-mode trace)")
        }
        if let frames = report.frames {
            lines.append(
                "  frames            \(frames.delivered) of \(frames.expected) delivered, \(frames.dropped) dropped, "
                    + "\(format(frames.fps, 1)) fps")
        }
        lines.append("  hitch ratio       \(format(report.hitchRatioMsPerSecond, 1)) ms/s")
        if let latency = report.loopLatency {
            lines.append(
                "  loop latency      p50 \(format(latency.p50Ms, 3)) ms, p90 \(format(latency.p90Ms, 3)) ms, "
                    + "p99 \(format(latency.p99Ms, 3)) ms, p99.9 \(format(latency.p999Ms, 3)) ms, "
                    + "max \(format(latency.maxMs, 3)) ms (\(latency.count) samples)")
        }
        lines.append("")
        let stalls = report.stalls
        let unfinished = stalls.unfinished > 0 ? ", \(stalls.unfinished) unfinished" : ""
        lines.append(style.bold("Stalls") + ": \(stalls.total), \(format(stalls.totalMs, 1)) ms in all\(unfinished)")
        lines.append(
            "  by tier      "
                + Tier.allCases.map { "\($0.rawValue) \(stalls.byTier[$0] ?? 0)" }.joined(separator: ", "))
        lines.append(
            "  by category  "
                + StallCategory.allCases.map {
                    "\($0.rawValue) \(stalls.byCategory[$0] ?? 0) (\(format(stalls.categoryMs[$0] ?? 0, 1)) ms)"
                }.joined(separator: ", "))
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
            lines += signatureLines(signature, rank: index + 1, style: style)
            if fleet { lines += FleetText.signatureLines(signature, traceCount: report.traces.count) }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func signatureLines(_ signature: StallReport.Signature, rank: Int, style: Style) -> [String] {
        var lines: [String] = []
        let title = "\(signature.category.rawValue): " + signature.frames.joined(separator: " ← ")
        lines.append("\(rank). " + style.bold(title))
        let tiers = Tier.allCases.compactMap { tier in signature.tiers[tier].map { "\($0) \(tier.rawValue)" } }
        lines.append(
            "   \(plural(signature.count, "stall")) (\(tiers.joined(separator: ", "))), total \(format(signature.totalMs, 1)) ms, "
                + "max \(format(signature.maxMs, 1)) ms")
        let shares = StallCategory.allCases.compactMap { category -> String? in
            let share = signature.categoryShares[category] ?? 0
            return share > 0 ? "\(category.rawValue) \(format(share * 100, 0)) %" : nil
        }
        if !shares.isEmpty { lines.append("   breakdown: " + shares.joined(separator: ", ")) }
        if !signature.reason.isEmpty { lines.append("   reason: \(signature.reason)") }
        let more = signature.sites.count > 1 ? " (and \(signature.sites.count - 1) more sites)" : ""
        lines.append("   posted at \(signature.site)\(more)")
        lines.append("   example: stallwatch show \(signature.example.trace) --stall \(signature.example.stall)")
        for frame in signature.stack.prefix(12) {
            let source = frame.source.map { " (\($0))" } ?? ""
            let text = "     \(frame.symbol)\(source)"
            lines.append(frame.system ? style.dim(text) : text)
        }
        if signature.stack.count > 12 { lines.append("     … \(signature.stack.count - 12) more frames") }
        return lines
    }
}
