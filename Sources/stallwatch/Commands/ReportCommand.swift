import StallwatchReport

/// `stallwatch report T|DIR… [--json] [--top N] [--list-traces]`: the summary of one or more
/// traces.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Summarize the stalls of one or more traces.",
        discussion: """
            Prints run time, loop utilisation, frames and FPS, the hitch ratio, stalls per tier \
            and per category, loop-latency percentiles and the top stall signatures (dominant \
            category + innermost app frames). Several traces are read in parallel and added up. A trace that ends inside a record \
            (a killed recorder) is read up to its last whole record, with a warning; a trace with \
            a damaged region is reported as far as it could be read, then the command exits 2. \
            A directory stands for every *.swtrace file under it. Several traces are summarised \
            (processes, hosts, builds, unreadable files) and each signature says how many traces \
            it affects and in which builds and on which hosts.
            """)

    /// The trace files, added up.
    @Argument(help: "The trace files or directories to read.")
    var traces: [String]

    /// Whether to print JSON.
    @Flag(help: "Print the report as JSON (schema: docs/cli.md).")
    var json = false

    /// How many signatures to list.
    @Option(valueName: "n", help: "How many stall signatures to list.")
    var top = 10

    /// Whether to print one line per trace even when there are many.
    @Flag(help: "With several traces, also print one line per trace.")
    var listTraces = false

    /// Reads the traces and prints the report.
    func run(in context: CommandContext) throws -> ExitCode {
        let loaded = try TraceInputs.load(traces, context: context, allowCorrupt: true)
        let report = ReportBuilder().report(loaded.traces, top: top, unreadable: loaded.unreadable)
        if json {
            context.standardOutput.write(try JSONOutput.encode(report))
        } else {
            context.standardOutput.write(ReportText.render(report, colour: context.usesColour, listTraces: listTraces))
        }
        if loaded.damaged {
            context.printError("Error: the report above covers only the readable parts of the traces")
            return .validationFailure
        }
        return .success
    }
}
