import StallwatchReport

/// `stallwatch report T|DIR… [--json] [--html FILE] [--top N] [--list-traces]`: the summary of
/// one or more traces.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Summarize the stalls of one or more traces.",
        discussion: """
            Prints run time, loop utilisation, frames and FPS, the hitch ratio, stalls per tier \
            and per category, loop-latency percentiles and the top stall signatures (dominant \
            category + innermost app frames) with each one's representative stack and the share of \
            the stall's time that stack stands for, and the call sites behind congested iterations. \
            Lines fit the terminal (COLUMNS, else its width, else 100 columns). Several traces are read in parallel and added up. A trace that ends inside a record \
            (a killed recorder) is read up to its last whole record, with a warning; a trace with \
            a damaged region is reported as far as it could be read, then the command exits 2. \
            A directory stands for every *.swtrace file under it. Several traces are summarised \
            (processes, hosts, builds, unreadable files) and each signature says how many traces \
            it affects and in which builds and on which hosts. \
            --html writes one self-contained page (timeline, flame graph, every signature and \
            stall) that opens in any browser without a network; '--html -' writes it to stdout \
            instead of the report.
            """)

    /// The trace files, added up.
    @Argument(help: "The trace files or directories to read ('-' for standard input).")
    var traces: [String]

    /// Whether to print JSON.
    @Flag(help: "Print the report as JSON (schema: docs/cli.md).")
    var json = false

    /// Where the HTML page goes, if anywhere.
    @Option(valueName: "file", help: "Write an HTML page too ('-' for stdout).")
    var html: OutputDestination?

    /// How many signatures to list.
    @Option(valueName: "n", help: "How many stall signatures to list.")
    var top = 10

    /// `--wide` and `--verbose`: how the text is laid out.
    @OptionGroup var text: TextFlags

    /// `--rules`: the app's own classification rules.
    @OptionGroup var rules: RulesOption

    /// `--by KEY`: the `AppState` key to group stalls by.
    @Option(name: .customLong("by"), valueName: "key", help: "Group stalls by this app-state key (AppState).")
    var groupBy: String?

    /// Whether expected-long stalls count with the others.
    @Flag(help: "Count stalls the app marked as expected to be long (expectLong) with the others.")
    var includeExpected = false

    /// Whether to print one line per trace even when there are many.
    @Flag(help: "With several traces, also print one line per trace.")
    var listTraces = false

    /// The page is never written over an input.
    func validate() throws(UsageError) {
        if case .file(let path) = html { try refuseOverwritingInputs([("--html", path)], inputs: traces) }
    }

    /// Reads the traces and prints the report.
    func run(in context: CommandContext) throws -> ExitCode {
        var builder = ReportBuilder(classifier: try rules.classifier(context: context))
        builder.includeExpected = includeExpected
        builder.groupBy = groupBy
        let loaded = try TraceInputs.load(
            traces, context: context, busyTime: html != nil, allowCorrupt: true, tallyingWith: builder,
            keepStalls: html != nil)
        defer { context.keepUntilExit(loaded) }
        let tallied = loaded.tallied ?? TalliedTraces()
        // Made once: the page lists every signature, the text and JSON the `top` ones.
        let everySignature = builder.report(tallied, top: html == nil ? top : .max, unreadable: loaded.unreadable)
        var report = everySignature
        report.signatures = Array(report.signatures.prefix(max(0, top)))
        if let html {
            var page = try ChunkedOutput(html, context: context)
            HTMLReport.write(everySignature, traces: loaded.traces, analyzed: loaded.analyzed, to: &page)
            try page.finish()
            if case .file(let path) = html {
                context.printError(
                    "wrote \(path) (html, \(report.stalls.total) stalls, \(page.byteCount / 1024 + 1) KiB)")
            }
        }
        if html != .standardOutput {
            if json {
                context.standardOutput.write(try JSONOutput.encode(report))
            } else {
                var options = text.options(in: context)
                options.listTraces = listTraces
                context.standardOutput.write(ReportText.render(report, options: options))
            }
        }
        if loaded.damaged {
            context.printError("Error: the report above covers only the readable parts of the traces")
            return .validationFailure
        }
        return .success
    }
}
