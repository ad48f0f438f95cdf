import StallwatchCore

extension SignatureDiff {
    /// The text `stallwatch diff` prints: a title line, then the new, worse, better and gone
    /// signatures with their counts and times in both runs, then how many are unchanged. With
    /// `colour`, ANSI bold, red and green. Pure; any thread.
    package func render(colour: Bool) -> String {
        let style = Style(enabled: colour)
        var lines = [
            style.bold("Signature diff") + ": \(base.joined(separator: ", ")) → \(new.joined(separator: ", ")) "
                + "(threshold \(format(thresholdPercent, 1)) %)"
        ]
        func section(_ title: String, _ entries: [Entry], _ mark: String, _ paint: (String) -> String) {
            lines.append("")
            lines.append(style.bold("\(title) (\(entries.count))"))
            for entry in entries {
                let change = entry.totalChangePercent.map { " (\($0 >= 0 ? "+" : "")\(format($0, 1)) %)" } ?? ""
                lines.append(
                    "  " + paint(mark) + " \(entry.category.rawValue): \(entry.frames.joined(separator: " ← "))  "
                        + "\(entry.baseCount) → \(plural(entry.newCount, "stall")), \(format(entry.baseTotalMs, 1)) → "
                        + "\(format(entry.newTotalMs, 1)) ms\(change)")
            }
        }
        section("New", added, "+", style.red)
        section("Worse", worse, "▲", style.red)
        section("Better", better, "▼", style.green)
        section("Gone", gone, "-", style.green)
        lines.append("")
        lines.append("Unchanged: " + plural(unchanged.count, "signature"))
        return terminalText(lines, style: style)
    }
}
