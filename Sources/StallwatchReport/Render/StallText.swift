import StallwatchCore

/// The text of `stallwatch show`: one stall and its samples as a timeline.
///
/// Pure; use it on any thread.
public enum StallText {
    /// `analyzed` as text: a title (id, tier, duration, flags, trace), the callout (kind,
    /// label, posting site, mode, phase), its category breakdown, reasons and signature, one
    /// line per sample (time since the callout started, thread state, syscall, verdict, top
    /// frames, annotation) and the representative stack. With `colour`, headings are ANSI
    /// bold and system frames dim.
    public static func render(_ analyzed: AnalyzedStall, colour: Bool) -> String {
        let style = Style(enabled: colour)
        let stall = analyzed.stall
        var lines: [String] = []
        var flags: [String] = []
        if stall.flags.contains(.unfinished) { flags.append("unfinished") }
        if stall.flags.contains(.suspended) { flags.append("suspended") }
        if stall.flags.contains(.captureTimedOut) { flags.append("capture timed out") }
        let duration = format(Double(analyzed.durationNanos) / 1e6, 1) + " ms"
        lines.append(
            style.bold("Stall \(stall.id)") + " — \(stall.tier.rawValue), \(duration)"
                + (flags.isEmpty ? "" : " (\(flags.joined(separator: ", ")))") + " in \(analyzed.tracePath)")
        let callout = stall.callout
        let label = callout.label.map { " \"\($0)\"" } ?? ""
        lines.append(
            "  callout   \(callout.kind)\(label) posted at \(callout.file):\(callout.line), mode \(callout.mode), "
                + "phase \(callout.phase)")
        let shares = StallCategory.allCases.compactMap { category -> String? in
            let share = analyzed.breakdown.share(of: category)
            return share > 0 ? "\(category.rawValue) \(format(share * 100, 0)) %" : nil
        }
        lines.append(
            "  category  \(analyzed.category.rawValue)" + (shares.isEmpty ? "" : ": \(shares.joined(separator: ", "))"))
        if !analyzed.breakdown.topReasons.isEmpty {
            lines.append(
                "  reasons   "
                    + analyzed.breakdown.topReasons.map { "\($0.reason) \(format($0.share * 100, 0)) %" }
                    .joined(separator: ", "))
        }
        for wait in WaitSummary.top([stall], limit: 2) {
            lines.append("  waited on \(wait.text) (\(format(wait.share * 100, 0)) % of samples)")
        }
        lines.append("  signature \(analyzed.key.text)")
        lines.append("")
        if stall.samples.isEmpty {
            lines.append("No samples.")
            return lines.joined(separator: "\n") + "\n"
        }
        lines.append(style.bold("Samples") + " (\(stall.samples.count); time from the callout's start)")
        lines.append(
            "  " + padLeft("time", 10) + "  " + pad("state", 12) + "  " + pad("syscall", 16) + "  "
                + pad("category", 9) + "  " + pad("reason", 24) + "  top frames")
        for (index, sample) in stall.samples.enumerated() {
            let offset = sample.time >= stall.start ? sample.time - stall.start : 0
            let verdict = analyzed.classifications[index]
            let syscall = sample.syscallName ?? sample.syscall.map { "#\($0)" } ?? "-"
            // The innermost frame, then the next two that are not compiler-generated glue.
            let shown = sample.frames.enumerated().filter { $0.offset == 0 || !isCompilerGenerated($0.element) }
            var frames = shown.prefix(3).map { frameName($0.element) }.joined(separator: " ← ")
            if shown.count > 3 { frames += " ← …" }
            if sample.captureTimedOut { frames = "(capture timed out)" }
            let annotation = sample.annotation.map { "  [\($0.label)]" } ?? ""
            lines.append(
                "  " + padLeft("+" + format(Double(offset) / 1e6, 1) + " ms", 10) + "  "
                    + pad("\(sample.state.procCode) \(sample.state.name)", 12) + "  " + pad(syscall, 16) + "  "
                    + pad(verdict.category.rawValue, 9) + "  " + pad(verdict.reason, 24) + "  " + frames + annotation)
        }
        lines += ownerStackLines(stall, style: style)
        if let index = analyzed.representativeSample {
            lines.append("")
            lines.append(style.bold("Representative stack") + " (sample \(index + 1), innermost first)")
            for frame in stall.samples[index].frames {
                let stack = ReportBuilder.stackFrame(frame)
                let text =
                    "  \(stack.symbol)" + (stack.source.map { " (\($0))" } ?? "")
                    + (stack.module.map { "  \(Frame.basename($0))" } ?? "")
                lines.append(stack.system ? style.dim(text) : text)
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
