import StallwatchReport

/// `stallwatch report T… [--json] [--top N]`: the summary of one or more traces.
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
            a damaged region is reported as far as it could be read, then the command exits 2.
            """)

    /// The trace files, added up.
    @Argument(help: "The trace files to read ('-' for standard input).")
    var traces: [String]

    /// Whether to print JSON.
    @Flag(help: "Print the report as JSON (schema: docs/cli.md).")
    var json = false

    /// How many signatures to list.
    @Option(valueName: "n", help: "How many stall signatures to list.")
    var top = 10

    /// Whether lines may be as long as their content.
    @Flag(help: "Do not fit lines to the terminal: show long names in full.")
    var wide = false

    /// Whether frames show their full symbols.
    @Flag(help: "Show frames by their full demangled symbols.")
    var verbose = false

    /// Reads the traces and prints the report.
    func run(in context: CommandContext) throws -> ExitCode {
        let loaded = try TraceInputs.load(traces, context: context, allowCorrupt: true)
        let report = ReportBuilder().report(loaded.traces, top: top)
        if json {
            context.standardOutput.write(try JSONOutput.encode(report))
        } else {
            context.standardOutput.write(
                ReportText.render(report, options: context.textOptions(wide: wide, verbose: verbose)))
        }
        if loaded.damaged {
            context.printError("Error: the report above covers only the readable parts of the traces")
            return .validationFailure
        }
        return .success
    }
}
