import StallwatchCore

#if canImport(Glibc)
    import Glibc
#endif

/// `stallwatch export T --format chrome|folded|speedscope -o FILE`.
public struct ExportCommand: Command {
    /// An export format.
    public enum Format: String, CaseIterable, Sendable {
        /// Chrome trace event JSON (Perfetto UI, chrome://tracing).
        case chrome
        /// Folded stacks (flamegraph.pl, inferno, speedscope).
        case folded
        /// speedscope JSON.
        case speedscope
    }

    /// The name, abstract and arguments.
    public static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export a trace for Perfetto, flame graphs or speedscope.",
        discussion: """
            chrome: stalls, samples and (full mode) callouts on the main thread's track; open in \
            https://ui.perfetto.dev or chrome://tracing. folded: 'category;outer;...;inner MICROSECONDS' \
            lines for flame graphs. speedscope: open in https://www.speedscope.app.
            """,
        arguments: [
            .positional("trace", help: "The trace file to read."),
            .option("format", valueName: "format", help: "chrome, folded or speedscope.", required: true),
            .option(
                "output", short: "o", valueName: "file", help: "The file to write ('-' for stdout).", required: true),
        ])

    /// The trace file.
    public var trace: String
    /// The format.
    public var format: Format
    /// The output path, `-` for stdout.
    public var output: String

    /// Builds the command from parsed arguments.
    public init(parsing arguments: ParsedArguments) throws(UsageError) {
        trace = arguments.value("trace") ?? ""
        output = arguments.value("output") ?? "-"
        let name = arguments.value("format") ?? ""
        guard let format = Format(rawValue: name) else {
            throw arguments.invalid(name, "format", "one of chrome, folded, speedscope")
        }
        self.format = format
    }

    /// Reads the trace and writes the export.
    public func run(in context: CommandContext) throws -> ExitCode {
        let loaded = try TraceInputs.load([trace], context: context, includeCallouts: format == .chrome).traces[0]
        let stalls = ReportBuilder().analyze([loaded])[0]
        let text: String
        switch format {
        case .chrome: text = ChromeTraceExporter.export(loaded, stalls: stalls)
        case .folded: text = FoldedStacksExporter.export(stalls)
        case .speedscope: text = SpeedscopeExporter.export(stalls, name: loaded.path)
        }
        if output == "-" {
            context.standardOutput.write(text)
        } else {
            try writeFile(output, text)
            context.printError("wrote \(output) (\(format.rawValue), \(stalls.count) stalls)")
        }
        return .success
    }
}

/// Writes `text` to `path`, replacing it; throws a one-line `CommandFailure`.
func writeFile(_ path: String, _ text: String) throws(CommandFailure) {
    guard let file = fopen(path, "w") else {
        throw CommandFailure("\(path): cannot write (\(String(cString: strerror(errno))))")
    }
    var text = text
    let written = text.withUTF8 { fwrite($0.baseAddress, 1, $0.count, file) }
    let closed = fclose(file)
    if written != text.utf8.count || closed != 0 {
        throw CommandFailure("\(path): cannot write (\(String(cString: strerror(errno))))")
    }
}
