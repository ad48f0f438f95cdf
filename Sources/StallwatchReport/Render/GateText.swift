import StallwatchCore

/// The text of `stallwatch gate`.
///
/// Pure; use it on any thread.
package enum GateText {
    /// The outcome of checking `report`: a title line (traces, stalls, run time), one
    /// `PASS`/`FAIL` line per check with its measured value and limit, and a result line.
    /// With `colour`, the title is ANSI bold, `PASS` green and `FAIL` red.
    package static func render(_ checks: [GateCheck], of report: StallReport, colour: Bool) -> String {
        let style = Style(enabled: colour)
        let width = max(6, checks.map(\.name.count).max() ?? 0)
        var lines = [
            style.bold("Gate") + ": \(plural(report.traces.count, "trace")), "
                + "\(plural(report.stalls.total, "stall")), \(format(report.runTimeSeconds, 2)) s"
        ]
        for check in checks {
            let verdict = check.passed ? style.green("PASS") : style.red("FAIL")
            lines.append("  \(verdict)  \(pad(check.name, width))  \(check.measured) (limit \(check.limit))")
        }
        let failed = checks.filter { !$0.passed }.count
        if failed == 0 {
            lines.append("Result: " + style.green("PASS") + " (\(plural(checks.count, "limit")))")
        } else {
            lines.append("Result: " + style.red("FAIL") + " (\(failed) of \(plural(checks.count, "limit")) exceeded)")
        }
        return terminalText(lines, style: style)
    }
}
