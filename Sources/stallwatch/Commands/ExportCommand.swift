import StallwatchReport

/// `stallwatch export T --format chrome|folded|speedscope -o FILE`.
struct ExportCommand: ParsableCommand {
    /// An export format.
    enum Format: String, CaseIterable, Sendable, ExpressibleByArgument {
        /// Chrome trace event JSON (Perfetto UI, chrome://tracing).
        case chrome
        /// Folded stacks (flamegraph.pl, inferno, speedscope).
        case folded
        /// speedscope JSON.
        case speedscope

        init?(argument: String) { self.init(rawValue: argument) }
        static var expectation: String { "one of " + allCases.map(\.rawValue).joined(separator: ", ") }
        var defaultValueDescription: String { rawValue }
    }

    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export a trace for Perfetto, flame graphs or speedscope.",
        discussion: """
            chrome: stalls, samples and (full mode) callouts on the main thread's track; open in \
            https://ui.perfetto.dev or chrome://tracing. folded: 'category;outer;...;inner MICROSECONDS' \
            lines for flame graphs. speedscope: open in https://www.speedscope.app.
            """)

    /// The trace file.
    @Argument(help: "The trace file to read ('-' for standard input).")
    var trace: String

    /// The format.
    @Option(help: "chrome, folded or speedscope.")
    var format: Format

    /// Where the export goes.
    @Option(name: .shortAndLong, valueName: "file", help: "The file to write ('-' for stdout).")
    var output: OutputDestination

    /// Reads the trace and writes the export.
    func run(in context: CommandContext) throws -> ExitCode {
        let loaded = try TraceInputs.load([trace], context: context, includeCallouts: format == .chrome).traces[0]
        let stalls = ReportBuilder().analyze([loaded])[0]
        let text: String
        switch format {
        case .chrome: text = ChromeTraceExporter.export(loaded, stalls: stalls)
        case .folded: text = FoldedStacksExporter.export(stalls, traces: [loaded])
        case .speedscope: text = SpeedscopeExporter.export(stalls, name: loaded.path, traces: [loaded])
        }
        if let note = ExportNotes.stallsWithoutSamples(stalls, chrome: format == .chrome) {
            context.printError("note: \(note)")
        }
        switch output {
        case .standardOutput:
            context.standardOutput.write(text)
        case .file(let path):
            try writeFile(path, text)
            context.printError("wrote \(path) (\(format.rawValue), \(stalls.count) stalls)")
        }
        return .success
    }
}
