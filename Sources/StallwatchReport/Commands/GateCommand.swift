import StallwatchCore

/// `stallwatch gate T… [limits…] [--junit FILE]`: fails (exit 1) when a limit is exceeded.
public struct GateCommand: Command {
    /// The name, abstract and arguments.
    public static let configuration = CommandConfiguration(
        commandName: "gate",
        abstract: "Check traces against stall limits (for CI).",
        discussion: """
            Exits 0 when every limit passes, 1 when one fails, 2 for a usage error or an \
            unreadable trace. Each limit is printed with its measured value and PASS or FAIL. Stalls are counted by \
            their dominant category. The regression limit compares the hitch ratio (ms of overrun \
            per second of run time) with the baseline's; a baseline of 0 allows no hitches.
            """,
        arguments: [
            .positional("traces", help: "The trace files to check (added up).", repeating: true),
            .option("max-stalls", valueName: "n", help: "At most this many stalls."),
            .option("max-hangs", valueName: "n", help: "At most this many hangs (at least 250 ms by default)."),
            .option("max-hitch-ratio", valueName: "ms-per-s", help: "At most this many ms of overrun per second."),
            .option(
                "max", valueName: "category=n",
                help: "At most n stalls of the category (compute, io, lockWait, database, other).",
                repeating: true),
            .option("baseline", valueName: "trace", help: "A baseline trace for --max-regression."),
            .option(
                "max-regression", valueName: "pct",
                help: "How far the hitch ratio may exceed the baseline's, in percent."),
            .option("junit", valueName: "file", help: "Also write the results as JUnit XML."),
        ])

    /// The traces.
    public var traces: [String]
    /// The limits, without the baseline's (added once it is read).
    public var limits: [GateLimit]
    /// The baseline trace.
    public var baseline: String?
    /// The allowed regression, in percent.
    public var maxRegression: Double?
    /// Where to write JUnit XML.
    public var junit: String?

    /// Builds the command from parsed arguments.
    public init(parsing arguments: ParsedArguments) throws(UsageError) {
        traces = arguments.all("traces")
        var limits: [GateLimit] = []
        if let maximum = try arguments.integer("max-stalls") { limits.append(.maxStalls(maximum)) }
        if let maximum = try arguments.integer("max-hangs") { limits.append(.maxHangs(maximum)) }
        if let maximum = try arguments.number("max-hitch-ratio") { limits.append(.maxHitchRatio(maximum)) }
        for text in arguments.all("max") {
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let category = StallCategory(rawValue: parts[0]), let maximum = Int(parts[1]),
                maximum >= 0
            else {
                throw arguments.invalid(
                    text, "max", "CATEGORY=N with a category of compute, io, lockWait, database, other")
            }
            limits.append(.maxCategory(category, maximum))
        }
        self.limits = limits
        baseline = arguments.value("baseline")
        maxRegression = try arguments.number("max-regression")
        junit = arguments.value("junit")
    }

    /// Needs at least one limit, and --baseline with --max-regression.
    public func validate() throws(UsageError) {
        if (baseline == nil) != (maxRegression == nil) {
            throw UsageError("--baseline and --max-regression go together")
        }
        if limits.isEmpty && baseline == nil {
            throw UsageError(
                "Give at least one limit (--max-stalls, --max-hangs, --max-hitch-ratio, --max, --max-regression)")
        }
    }

    /// Reads the traces, checks the limits, prints and writes the results.
    public func run(in context: CommandContext) throws -> ExitCode {
        let loaded = try TraceInputs.load(traces, context: context).traces
        let builder = ReportBuilder()
        let report = builder.report(loaded, top: 0)
        var limits = self.limits
        if let baseline, let maxRegression {
            let base = try TraceInputs.load([baseline], context: context).traces
            limits.append(.maxRegression(percent: maxRegression, baseline: builder.report(base, top: 0)))
        }
        let checks = Gate.evaluate(report, limits: limits)
        let style = Style(enabled: context.usesColour)
        let width = max(6, checks.map(\.name.count).max() ?? 0)
        context.print(
            style.bold("Gate") + ": \(traces.count) \(traces.count == 1 ? "trace" : "traces"), "
                + "\(report.stalls.total) stalls, \(format(report.runTimeSeconds, 2)) s")
        for check in checks {
            let verdict = check.passed ? style.green("PASS") : style.red("FAIL")
            context.print("  \(verdict)  \(pad(check.name, width))  \(check.measured) (limit \(check.limit))")
        }
        let failed = checks.filter { !$0.passed }.count
        if let junit { try writeFile(junit, Gate.junit(checks)) }
        if failed == 0 {
            context.print("Result: " + style.green("PASS") + " (\(checks.count) limits)")
            return .success
        }
        context.print("Result: " + style.red("FAIL") + " (\(failed) of \(checks.count) limits exceeded)")
        return .failure
    }
}
