import StallwatchCore

/// The text of `stallwatch show`: one stall and its samples as a timeline, or the list of a
/// trace's stalls.
///
/// Pure; use it on any thread.
package enum StallText {
    /// `analyzed` as text: a title (id, tier, duration, flags, trace), the callout (kind,
    /// label, posting site, mode, phase), its category breakdown, reasons and signature, one
    /// line per sample (time since the callout started, thread state, syscall, verdict, where
    /// its stack came from, top frames, annotation) and the representative stack with its confidence. Lines fit
    /// `options.width`; with `options.colour`, headings are ANSI bold and system frames dim;
    /// with `options.verbose`, the stack shows full symbols.
    package static func render(_ analyzed: AnalyzedStall, options: TextOptions) -> String {
        let style = Style(enabled: options.colour)
        let width = options.width.map { max($0, minimumWidth) }
        let stall = analyzed.stall
        var lines: [String] = []
        var flags: [String] = []
        if stall.flags.contains(.unfinished) { flags.append("unfinished") }
        if stall.flags.contains(.suspended) { flags.append("suspended") }
        let stopped = StallAccounting.stoppedNanos(in: 0..<UInt64.max, of: stall.stopped)
        if stopped > 0 { flags.append("stopped \(format(Double(stopped) / 1e6, 1)) ms, left out") }
        if stall.flags.contains(.captureTimedOut) { flags.append("capture timed out") }
        if let expected = stall.expected { flags.append("expected: \(expected)") }
        let duration = format(Double(analyzed.durationNanos) / 1e6, 1) + " ms"
        let title =
            "Stall \(stall.id) — \(stall.tier.rawValue), \(duration)"
            + (flags.isEmpty ? "" : " (\(flags.joined(separator: ", ")))")
        lines += wrapItems(
            [title, "in " + analyzed.tracePath], separator: " ", first: "", continuation: "  ", width: width
        )
        .map { style.bold($0) }
        let callout = stall.callout
        let label = callout.label.map { " \"\($0)\"" } ?? ""
        lines += wrapItems(
            [
                "\(callout.kind)\(label) posted at \(analyzed.site)", "mode \(callout.mode)",
                "phase \(callout.phase)",
            ], separator: ", ", first: "  callout   ", continuation: "            ", width: width)
        if !stall.context.isEmpty {
            lines += wrapItems(
                stall.context.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }, separator: ", ",
                first: "  app state ", continuation: "            ", width: width)
        }
        let shares = StallCategory.allCases.compactMap { category -> String? in
            let share = analyzed.breakdown.share(of: category)
            // A share that rounds to 0 % is left out, not shown as "0 %".
            return share >= 0.005 ? "\(category.rawValue) \(format(share * 100, 0)) %" : nil
        }
        lines.append(
            "  category  \(analyzed.category.rawValue)" + (shares.isEmpty ? "" : ": \(shares.joined(separator: ", "))"))
        if !analyzed.breakdown.topReasons.isEmpty {
            lines += wrapItems(
                analyzed.breakdown.topReasons.map {
                    "\(SwiftNames.simplify($0.reason)) \(format($0.share * 100, 0)) %"
                }, separator: ", ",
                first: "  reasons   ", continuation: "            ", width: width)
        }
        for wait in WaitSummary.top([stall], limit: 2) {
            lines.append(elideMiddle("  waited on \(wait.text) (\(format(wait.share * 100, 0)) % of samples)", width))
        }
        lines += wrapItems(
            analyzed.key.frames, separator: " ← ", first: "  signature \(analyzed.key.category.rawValue): ",
            continuation: "            ", width: width)
        if let spread = ThreadSpread(analyzed) {
            lines.append(
                "  threads   the representative stack on \(spread.withStack) of the \(spread.threads) threads"
                    + " sampled at each look")
        }
        lines.append("")
        if let leadUp = analyzed.leadUp {
            lines += leadUpLines(leadUp, style: style, width: width)
            lines.append("")
        }
        if stall.samples.isEmpty {
            lines.append("No samples.")
            return terminalText(lines, style: style)
        }
        // Where the stacks came from: in the heading when every sample says the same, else a
        // column (docs/watchdog.md, "Where a sample's stack comes from").
        let sources = Set(stall.samples.map(\.source))
        let sourceColumn = sources.count > 1
        // The thread of each sample, when the stall sampled several (a starved pool).
        let threadColumn = Set(stall.samples.map(\.tid)).count > 1
        let uniform = sources.count == 1 ? "; stacks: \(stall.samples[0].source)" : ""
        lines.append(
            style.bold("Samples") + " (\(stall.samples.count)\(uniform); time from the callout's start)")
        // The reason column gives way first so the frames keep 20 columns (16 beside a source
        // column).
        let (fixed, frameRoom, narrowest) = sourceColumn ? (57, 16, 7) : (49, 20, 8)
        let threadWidth = threadColumn ? 9 : 0
        let reasonWidth = width.map { min(18, max(narrowest, $0 - fixed - threadWidth - frameRoom)) } ?? 18
        let columns =
            "  " + padLeft("time", 9) + "  " + (threadColumn ? padLeft("thread", 7) + "  " : "") + pad("state", 10)
            + "  " + pad("syscall", 10) + "  "
            + pad("category", 8) + "  " + pad("reason", reasonWidth) + "  "
            + (sourceColumn ? pad("stack", 6) + "  " : "")
        lines.append(columns + "top frames")
        for (index, sample) in stall.samples.enumerated() {
            let offset = sample.time >= stall.start ? sample.time - stall.start : 0
            let verdict = analyzed.classifications[index]
            let syscall = sample.syscallName ?? sample.syscall.map { "#\($0)" } ?? "-"
            let annotation = sample.annotation.map { "  [\($0.label)]" } ?? ""
            let head =
                "  " + padLeft("+" + format(Double(offset) / 1e6, 1) + " ms", 9) + "  "
                + (threadColumn ? padLeft("\(sample.tid)", 7) + "  " : "")
                + pad(elideMiddle("\(sample.state.procCode) \(sample.state.name)", 10), 10) + "  "
                + pad(elideMiddle(syscall, 10), 10) + "  " + pad(verdict.category.rawValue, 8) + "  "
                + pad(elideMiddle(SwiftNames.simplify(verdict.reason), reasonWidth), reasonWidth) + "  "
                + (sourceColumn ? pad(sample.source.description, 6) + "  " : "")
            let room = width.map { max($0 - head.count - annotation.count, 16) }
            let frames =
                sample.frames.isEmpty
                ? (sample.captureTimedOut ? "(capture timed out)" : "(no stack)")
                : topFrames(sample.frames, names: analyzed.names, room: room)
            lines.append(head + frames + annotation)
        }
        lines += ownerStackLines(analyzed, style: style, options: options, width: width)
        if let representative = analyzed.representative {
            lines.append("")
            let share = format(representative.confidence * 100, 0)
            lines += wrapItems(
                [
                    style.bold("Representative stack") + " (sample \(representative.sample + 1), innermost first):",
                    "\(share) % of the stall's time,",
                    "\(representative.samples) of \(plural(stall.samples.count, "sample"))",
                ], separator: " ", first: "", continuation: "  ", width: width.map { $0 + (options.colour ? 8 : 0) })
            for frame in analyzed.representativeFrames {
                let stack = ReportBuilder.stackFrame(frame, names: analyzed.names)
                let text = ReportText.frameLine(
                    indent: "  ", name: options.verbose ? stack.symbol : stack.name, source: stack.source,
                    module: stack.module.map { String(Frame.basename($0)) }, width: width)
                lines.append(stack.system ? style.dim(text) : text)
            }
            // Where the awaiting callers (async frames) end: the task's root, or why they stop.
            if stall.samples.indices.contains(representative.sample),
                let end = stall.samples[representative.sample].asyncChainEnd
            {
                lines.append(style.dim("  (\(end.marker))"))
            }
        }
        return terminalText(lines, style: style)
    }

    /// The innermost frame, then the next ones that are not compiler-generated glue, as many
    /// as fit `room` (the first elided to fit), `← …` when some are left out.
    static func topFrames(_ frames: [Frame], names: FrameNamer, room: Int?) -> String {
        let shown = frames.enumerated().filter { $0.offset == 0 || !isCompilerGenerated($0.element) }
            .prefix(3).map { names.name($0.element) }
        return fitChain(shown, more: frames.count > shown.count, room: room)
    }

    /// `names` joined by ` ← ` in `room` columns: the first elided to fit, then as many of
    /// the rest as fit (each elided down to 12 columns), `← …` when some are left out or
    /// `more` says there were others.
    static func fitChain(_ shown: [String], more hasMore: Bool, room: Int?) -> String {
        guard let first = shown.first else { return "-" }
        let more = hasMore ? " ← …" : ""
        guard let room else { return shown.joined(separator: " ← ") + more }
        var text = elideMiddle(first, room - (shown.count > 1 || !more.isEmpty ? 4 : 0))
        var used = 1
        for name in shown.dropFirst() {
            let tail = used + 1 < shown.count || !more.isEmpty ? 4 : 0
            let left = room - text.count - 3 - tail
            guard left >= min(name.count, 12) else { break }
            text += " ← " + elideMiddle(name, left)
            used += 1
        }
        return text + (used < shown.count || !more.isEmpty ? " ← …" : "")
    }

    /// The stalls of one trace, one line each (id, tier, duration, category, stack
    /// confidence, posting site, signature): what `stallwatch show T` prints without
    /// `--stall`.
    package static func list(_ stalls: [AnalyzedStall], trace: String, options: TextOptions) -> String {
        let style = Style(enabled: options.colour)
        let width = options.width.map { max($0, minimumWidth) }
        var lines = wrapItems(
            [style.bold("Stalls") + " in \(trace):", plural(stalls.count, "stall")], separator: " ", first: "",
            continuation: "  ", width: width.map { $0 + (options.colour ? 8 : 0) })
        guard !stalls.isEmpty else { return terminalText(lines, style: style) }
        // The site column gives way first so the signature keeps 20 columns.
        let siteWidth = min(stalls.map(\.site.count).max() ?? 4, width.map { min(28, max(12, $0 - 50 - 20)) } ?? 28)
        lines.append(
            "  " + padLeft("id", 4) + "  " + pad("tier", 9) + "  " + padLeft("duration", 10) + "  " + pad("category", 8)
                + "  " + padLeft("stack", 5) + "  " + pad("site", siteWidth) + "  signature")
        var marked: Set<Character> = []
        for analyzed in stalls {
            let stall = analyzed.stall
            // Marks, explained under the list: unfinished, expected, stopped or suspended.
            var marks = ""
            if stall.flags.contains(.unfinished) { marks += "+" }
            if stall.expected != nil { marks += "*" }
            if stall.flags.contains(.suspended) || !stall.stopped.isEmpty { marks += "!" }
            marked.formUnion(marks)
            let duration = format(Double(analyzed.durationNanos) / 1e6, 1) + " ms" + marks
            let confidence = analyzed.representative.map { format($0.confidence * 100, 0) + "%" } ?? "-"
            let head =
                "  " + padLeft(String(stall.id), 4) + "  " + pad(stall.tier.rawValue, 9) + "  " + padLeft(duration, 10)
                + "  " + pad(analyzed.category.rawValue, 8) + "  " + padLeft(confidence, 5) + "  "
                + pad(elideMiddle(analyzed.site, siteWidth), siteWidth) + "  "
            lines.append(
                head + fitChain(analyzed.key.frames, more: false, room: width.map { max($0 - head.count, 16) }))
        }
        let legend = [
            ("+", "+ unfinished (the process ended in it)"), ("*", "* expected (expectLong), counted apart"),
            ("!", "! the process was stopped (SIGSTOP, a debugger) during it"),
        ].filter { marked.contains(Character($0.0)) }.map(\.1)
        if !legend.isEmpty {
            lines += wrapItems(legend, separator: "; ", first: "  ", continuation: "  ", width: width)
        }
        lines.append("")
        lines.append("Show one: stallwatch show \(trace) --stall ID")
        return terminalText(lines, style: style)
    }
}
