import StallwatchCore

/// The congestion section of `report`'s text.
enum CongestionText {
    static func lines(_ congestion: StallReport.CongestionStats, style: Style, width: Int?) -> [String] {
        var lines: [String] = []
        lines.append(
            style.bold("Congestion") + ": \(plural(Int(congestion.iterations), "iteration")) overran the budget "
                + "through many callouts, none a stall")
        if congestion.described > 0 {
            lines += wrapItems(
                [
                    "\(congestion.described) described", "\(format(congestion.totalMs, 1)) ms in all",
                    "\(format(congestion.overBudgetMs, 1)) ms over the budget",
                ], separator: ", ", first: "  ", continuation: "    ", width: width)
        }
        if congestion.sites.isEmpty {
            lines.append(
                elideMiddle(
                    "  sites not recorded: the recorder kept no callouts (its flight recorder was off)", width))
            return lines
        }
        lines.append("  " + padLeft("share", 5) + "  " + padLeft("time", 10) + "  " + padLeft("callouts", 8) + "  site")
        for site in congestion.sites {
            let label = site.label.isEmpty ? "" : " \"\(site.label)\""
            let head =
                "  " + padLeft(format(site.share * 100, 0) + "%", 5) + "  "
                + padLeft(format(site.totalMs, 1) + " ms", 10)
                + "  " + padLeft(String(site.callouts), 8) + "  "
            lines.append(
                head + elideMiddle("\(site.kind)\(label) \(site.site)", width.map { max($0 - head.count, 12) }))
        }
        if congestion.siteCount > congestion.sites.count {
            let others = congestion.siteCount - congestion.sites.count
            lines.append("  … and \(others) more \(others == 1 ? "site" : "sites")")
        }
        return lines
    }
}
