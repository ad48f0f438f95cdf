import StallwatchCore

/// The fleet parts of `stallwatch report`'s text: the summary that replaces one line per trace
/// when there are several, and each signature's spread over traces, builds and hosts. Lists fit
/// the report's width (as many items as fit, then how many more); `nil` width lists them all.
///
/// Pure; use it on any thread.
enum FleetText {
    /// The summary under the title: processes, hosts, builds, time span, unreadable inputs.
    static func summaryLines(_ report: StallReport, listed: Bool, width: Int? = 100) -> [String] {
        let fleet = report.fleet
        var lines: [String] = []
        var processes: [String: Int] = [:]
        for trace in report.traces where !trace.process.isEmpty { processes[trace.process, default: 0] += 1 }
        let named = processes.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\($0.key) \($0.value)" }
        let processWord = fleet.processes == 1 ? "process" : "processes"
        lines.append(fit("  \(fleet.processes) \(processWord):", named, width: width))
        // A recording of a process tree: each process by name and pid, the root first.
        for tree in report.processTrees {
            let members = tree.processes.map { "\($0.process) \($0.pid)" + ($0.root ? " (root)" : "") }
            let noun = members.count == 1 ? "process" : "processes"
            lines.append(fit("  recording \(tree.trace), \(members.count) \(noun):", members, width: width))
        }
        lines.append(
            "  \(plural(fleet.hosts, "host")), \(plural(fleet.builds, "build")), "
                + "\(plural(fleet.appVersions, "app version")), \(megabytes(fleet.bytes)) read")
        var span = "  \(format(report.runTimeSeconds, 1)) s of run time"
        if let first = fleet.firstStart, let last = fleet.lastEnd { span += ", \(first) to \(last)" }
        lines.append(span)
        for (head, groups) in [("build", report.rateByBuild), ("host", report.rateByHost)] where groups.count > 1 {
            let rates = groups.map { "\($0.name) \(format($0.hangRateSecondsPerHour, 1)) s/h" }
            lines.append(fit("  hang rate by \(head):", rates, width: width))
        }
        if !fleet.unreadable.isEmpty {
            lines.append("  \(fleet.unreadable.count) unreadable:")
            // Whole: a reason names its file, however long the path.
            for entry in fleet.unreadable.prefix(5) { lines.append("    \(entry.reason)") }
            if fleet.unreadable.count > 5 { lines.append("    … \(fleet.unreadable.count - 5) more") }
        }
        if !listed && report.traces.count > 1 { lines.append("  (--list-traces prints one line per trace)") }
        return lines
    }

    /// A signature's spread: traces affected, percentiles, first and last seen, builds, hosts.
    static func signatureLines(_ signature: StallReport.Signature, traceCount: Int, width: Int? = 100) -> [String] {
        var lines: [String] = []
        lines.append(
            "   in \(signature.traces) of \(plural(traceCount, "trace")) (\(format(signature.tracesPercent, 1)) %), "
                + "p50 \(format(signature.p50Ms, 1)) ms, p95 \(format(signature.p95Ms, 1)) ms, "
                + "max \(format(signature.maxMs, 1)) ms")
        if let first = signature.firstSeen, let last = signature.lastSeen {
            lines.append("   seen \(first) to \(last)")
        }
        lines.append(fit("   builds:", signature.builds.map { "\($0.name) \($0.stalls)" }, width: width))
        lines.append(fit("   hosts:", signature.hosts.map { "\($0.name) \($0.stalls)" }, width: width))
        return lines
    }

    /// `head item, item, …` with as many items as fit `width`, then `(+N more)`; at least one
    /// item, and all of them without a width.
    static func fit(_ head: String, _ items: [String], width: Int?) -> String {
        var line = head
        for (index, item) in items.enumerated() {
            let rest = items.count - index - 1
            let more = rest > 0 ? " (+\(rest) more)" : ""
            let candidate = line + (index == 0 ? " " : ", ") + item
            if index > 0, let width, candidate.count + more.count > width {
                return line + " (+\(items.count - index) more)"
            }
            line = candidate
        }
        return line
    }

    static func megabytes(_ bytes: Int) -> String {
        bytes < 1 << 20 ? "\(format(Double(bytes) / 1024, 1)) KiB" : "\(format(Double(bytes) / 1_048_576, 1)) MiB"
    }
}
