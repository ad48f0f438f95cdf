import StallwatchAnalysis
import StallwatchCore
import StallwatchReport

#if canImport(Glibc)
    import Glibc
#endif

/// `stallwatch gate T… [limits…] [--junit FILE]`: fails (exit 1) when a limit is exceeded.
struct GateCommand: ParsableCommand {
    /// `--max CATEGORY=N`: at most N stalls of the category.
    struct CategoryLimit: Sendable, ExpressibleByArgument {
        /// The category.
        var category: StallCategory
        /// The most stalls allowed.
        var maximum: Int

        init?(argument: String) {
            let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let category = StallCategory(rawValue: parts[0]),
                let maximum = Int(argument: parts[1])
            else { return nil }
            self.category = category
            self.maximum = maximum
        }

        static var expectation: String {
            "CATEGORY=N with a category of " + StallCategory.allCases.map(\.rawValue).joined(separator: ", ")
        }

        var defaultValueDescription: String { "\(category.rawValue)=\(maximum)" }
    }

    static let configuration = CommandConfiguration(
        commandName: "gate",
        abstract: "Check traces against stall limits (for CI).",
        discussion: """
            Exits 0 when every limit passes, 1 when one fails, 2 for a usage error or an \
            unreadable trace. Each limit is printed with its measured value and PASS or FAIL. Stalls are counted by \
            their dominant category. The regression limit compares the hitch ratio (ms of overrun \
            per second of run time) with the baseline's; a baseline of 0 allows no hitches. \
            --what-if leaves a signature's stalls out of the traces (not the baseline's), to \
            see which limits its fix would pass. The hang \
            rate is seconds of hangs (stalls of tier hang or severe, at least 250 ms by default) per \
            hour of run time.
            """)

    /// The traces, added up.
    @Argument(help: "The trace files or directories to check (added up).")
    var traces: [String]

    /// `--max-stalls`.
    @Option(valueName: "n", help: "At most this many stalls.")
    var maxStalls: Int?

    /// `--max-hangs`.
    @Option(valueName: "n", help: "At most this many hangs (at least 250 ms by default).")
    var maxHangs: Int?

    /// `--max-hitch-ratio`, in ms of overrun per second.
    @Option(valueName: "ms-per-s", help: "At most this many ms of overrun per second.")
    var maxHitchRatio: Double?

    /// `--max-hang-rate`, in seconds of hang per hour.
    @Option(valueName: "s-per-hour", help: "At most this many seconds of hang per hour of run time.")
    var maxHangRate: Double?

    /// Every `--max CATEGORY=N`, in order.
    @Option(
        name: .customLong("max"), valueName: "category=n",
        help: "At most n stalls of the category (compute, io, lockWait, database, other).")
    var categoryLimits: [CategoryLimit] = []

    /// The baseline for `--max-regression`.
    @Option(valueName: "trace", help: "A baseline trace or directory for --max-regression.")
    var baseline: String?

    /// How far the hitch ratio may exceed the baseline's, in percent.
    @Option(valueName: "pct", help: "How far the hitch ratio may exceed the baseline's, in percent.")
    var maxRegression: Double?

    /// Where to write JUnit XML.
    @Option(valueName: "file", help: "Also write the results as JUnit XML.")
    var junit: String?

    /// Every `--what-if SIGNATURE`: signatures whose stalls the limits leave out.
    @Option(
        name: .customLong("what-if"), valueName: "signature",
        help: "Check the limits as if this signature's stalls were fixed (as report prints it).")
    var whatIf: [String] = []

    /// Whether expected-long stalls count toward the limits.
    @Flag(help: "Count stalls the app marked as expected to be long (expectLong) toward the limits.")
    var includeExpected = false

    /// `--rules`: the app's own classification rules.
    @OptionGroup var rules: RulesOption

    /// The limits given, in option order, without the baseline's (added once it is read).
    var limits: [GateLimit] {
        var limits: [GateLimit] = []
        if let maxStalls { limits.append(.maxStalls(maxStalls)) }
        if let maxHangs { limits.append(.maxHangs(maxHangs)) }
        if let maxHitchRatio { limits.append(.maxHitchRatio(maxHitchRatio)) }
        if let maxHangRate { limits.append(.maxHangRate(maxHangRate)) }
        limits += categoryLimits.map { .maxCategory($0.category, $0.maximum) }
        return limits
    }

    /// Needs at least one limit, and --baseline with --max-regression.
    func validate() throws(UsageError) {
        if (baseline == nil) != (maxRegression == nil) {
            throw UsageError("--baseline and --max-regression go together")
        }
        if limits.isEmpty && baseline == nil {
            throw UsageError(
                "Give at least one limit (--max-stalls, --max-hangs, --max-hitch-ratio, --max-hang-rate, --max, "
                    + "--max-regression)")
        }
        if let junit {
            try refuseOverwritingInputs([("--junit", junit)], inputs: traces + (baseline.map { [$0] } ?? []))
        }
    }

    /// Reads the traces, checks the limits, writes the JUnit file and prints the results. An
    /// unreadable trace still writes the JUnit file (its `input` case errs with the reason),
    /// so CI shows why the gate failed.
    func run(in context: CommandContext) throws -> ExitCode {
        let clock = ContinuousClock()
        let started = clock.now
        let startedAt = time(nil)
        func junitRun(output: String, errors: [String]) -> JUnitRun {
            let properties =
                traces.map { JUnitRun.Property("trace", $0) }
                + (baseline.map { [JUnitRun.Property("baseline", $0)] } ?? [])
                + [JUnitRun.Property("stallwatch.version", StallwatchVersion.current)]
            return JUnitRun(
                timestamp: JUnitRun.timestamp(secondsSinceEpoch: startedAt), hostname: JUnitRun.currentHostname,
                seconds: Double((clock.now - started).nanoseconds) / 1e9, properties: properties,
                standardOutput: output, standardError: errors.joined(separator: "\n"))
        }
        var baseBuilder = ReportBuilder(classifier: try rules.classifier(context: context))
        baseBuilder.includeExpected = includeExpected
        var builder = baseBuilder
        builder.leavingOut = Set(signaturesLeftOut)
        let loaded: TraceInputs.Loaded
        var limits = self.limits
        do {
            loaded = try TraceInputs.load(traces, context: context, tallyingWith: builder)
            if let baseline, let maxRegression {
                let base = try TraceInputs.load([baseline], context: context, tallyingWith: baseBuilder)
                let baseReport = baseBuilder.report(base.tallied ?? TalliedTraces(), top: 0)
                limits.append(.maxRegression(percent: maxRegression, baseline: baseReport))
            }
        } catch let failure {
            guard let junit else { throw failure }
            let names = limits.map(\.name) + (baseline == nil ? [] : [GateLimit.regressionName])
            let run = junitRun(output: "", errors: failure.lines)
            do {
                try writeFile(junit, Gate.junit(unreadable: failure.lines, limits: names, run: run))
            } catch {
                throw CommandFailure(failure.lines + error.lines)
            }
            throw failure
        }
        let report = builder.report(loaded.tallied ?? TalliedTraces(), top: 0)
        let unmatched = signaturesLeftOut.filter { (report.leftOut[$0] ?? 0) == 0 }
        if !unmatched.isEmpty {
            // Stalls the app expected are set apart before signatures are matched.
            let expected =
                report.expected.stalls > 0
                ? "; or its stalls are among the \(report.expected.stalls) the app expected (expectLong), which "
                    + "no limit counts: add --include-expected to count them" : ""
            throw CommandFailure(
                unmatched.map {
                    "--what-if '\($0)': no stall of the traces has this signature "
                        + "(give it as report prints it: 'category: frame ← frame ← frame')\(expected)"
                })
        }
        let checks = Gate.evaluate(report, limits: limits)
        if let junit {
            let run = junitRun(
                output: whatIfLines(report) + GateText.render(checks, of: report, colour: false),
                errors: loaded.warnings)
            try writeFile(junit, Gate.junit(checks, run: run))
        }
        context.standardOutput.write(
            whatIfLines(report) + GateText.render(checks, of: report, colour: context.usesColour))
        return checks.allSatisfy(\.passed) ? .success : .failure
    }

    /// The `--what-if` signatures, each once, in option order (one given twice printed twice).
    private var signaturesLeftOut: [String] {
        var seen: Set<String> = []
        return whatIf.filter { seen.insert($0).inserted }
    }

    /// `As if fixed: SIGNATURE (N stalls left out)`, a line each, in option order.
    private func whatIfLines(_ report: StallReport) -> String {
        signaturesLeftOut.map { signature in
            let count = report.leftOut[signature] ?? 0
            return "As if fixed: \(signature) (\(count) \(count == 1 ? "stall" : "stalls") left out)\n"
        }.joined()
    }
}
