import StallwatchCore

extension StallText {
    /// The "Before it" section of `show --stall N`: the window's busy time, the sites that took
    /// it, and the last callouts, each line fitted to `width`.
    static func leadUpLines(_ leadUp: LeadUp, style: Style, width: Int?) -> [String] {
        var lines: [String] = []
        let window =
            leadUp.windowMs >= 1000 ? format(leadUp.windowMs / 1000, 1) + " s" : format(leadUp.windowMs, 0) + " ms"
        let lost = leadUp.lostEvents > 0 ? ", \(leadUp.lostEvents) callouts lost" : ""
        lines += wrapItems(
            [
                style.bold("Before it") + " (the last \(window)):",
                "\(plural(Int(leadUp.callouts), "callout")),",
                "\(format(leadUp.busyMs, 1)) ms busy (\(format(leadUp.busyShare * 100, 0)) %)\(lost)",
            ], separator: " ", first: "", continuation: "  ", width: width.map { $0 + (style.enabled ? 8 : 0) })
        guard !leadUp.sites.isEmpty else { return lines }
        lines.append("  " + padLeft("share", 5) + "  " + padLeft("time", 10) + "  " + padLeft("callouts", 8) + "  site")
        for site in leadUp.sites {
            let head =
                "  " + padLeft(format(site.share * 100, 0) + "%", 5) + "  "
                + padLeft(format(site.totalMs, 1) + " ms", 10)
                + "  " + padLeft(String(site.callouts), 8) + "  "
            lines.append(
                head + elideMiddle(name(site.kind, site.label, site.site), width.map { max($0 - head.count, 12) }))
        }
        lines.append("  last callouts (started before the stall, ran):")
        for callout in leadUp.recent {
            let head =
                "  " + padLeft("-" + format(callout.beforeMs, 1) + " ms", 11) + "  "
                + padLeft(format(callout.durationMs, 1) + " ms", 10) + "  "
            lines.append(
                head
                    + elideMiddle(
                        name(callout.kind, callout.label, callout.site), width.map { max($0 - head.count, 12) }))
        }
        return lines
    }

    private static func name(_ kind: String, _ label: String, _ site: String) -> String {
        "\(kind)\(label.isEmpty ? "" : " \"\(label)\"") \(site)"
    }
}
