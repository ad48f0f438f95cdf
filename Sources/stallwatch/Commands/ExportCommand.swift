import StallwatchReport

/// `stallwatch export T --format chrome|folded|speedscope|jsonl|otlp-json|pprof -o FILE`.
struct ExportCommand: ParsableCommand {
    /// An export format.
    enum Format: String, CaseIterable, Sendable, ExpressibleByArgument {
        /// Chrome trace event JSON (Perfetto UI, chrome://tracing).
        case chrome
        /// Folded stacks (flamegraph.pl, inferno, speedscope).
        case folded
        /// speedscope JSON.
        case speedscope
        /// JSON Lines, one object per stall (and per sample with --samples), for Spark/DuckDB.
        case jsonl
        /// An OTLP/JSON ExportTraceServiceRequest, one span per stall.
        case otlpJSON = "otlp-json"
        /// A gzip'ed pprof profile.proto of the stall samples.
        case pprof

        /// Whether the format takes many traces (a directory) in one file.
        var takesMany: Bool { self == .jsonl || self == .otlpJSON || self == .pprof }

        init?(argument: String) { self.init(rawValue: argument) }
        static var expectation: String { "one of " + allCases.map(\.rawValue).joined(separator: ", ") }
        var defaultValueDescription: String { rawValue }
    }

    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export traces for viewers, Spark/DuckDB, OpenTelemetry or pprof.",
        discussion: """
            chrome: stalls, samples and (full mode) callouts on the main thread's track; open in \
            https://ui.perfetto.dev or chrome://tracing. folded: 'category;outer;...;inner MICROSECONDS' \
            lines for flame graphs. speedscope: open in https://www.speedscope.app. jsonl, otlp-json \
            and pprof take a directory (every *.swtrace under it) or a trace: jsonl is one JSON \
            object per stall for Spark, DuckDB or ClickHouse (schema and queries: docs/fleet.md, \
            tools/fleet/); otlp-json is an OTLP ExportTraceServiceRequest for an OpenTelemetry \
            collector (POST /v1/traces); pprof is a gzip'ed profile.proto for go tool pprof, \
            Pyroscope or Grafana.
            """)

    /// The trace file.
    @Argument(help: "The trace: a file, '-' for standard input, or a directory (jsonl, otlp-json, pprof).")
    var trace: String

    /// The format.
    @Option(help: "chrome, folded, speedscope, jsonl, otlp-json or pprof.")
    var format: Format

    /// Where the export goes.
    @Option(name: .shortAndLong, valueName: "file", help: "The file to write ('-' for stdout).")
    var output: OutputDestination

    /// With jsonl: also one line per sample.
    @Flag(help: "jsonl: also write one line per sample.")
    var samples = false

    /// With otlp-json: also one span per callout.
    @Flag(help: "otlp-json: also one span per callout of a full-mode trace.")
    var callouts = false

    /// `--rules`: the app's own classification rules.
    @OptionGroup var rules: RulesOption

    /// The export is never written over its input.
    func validate() throws(UsageError) {
        if case .file(let path) = output { try refuseOverwritingInputs([("-o", path)], inputs: [trace]) }
    }

    /// Reads the trace and writes the export.
    func run(in context: CommandContext) throws -> ExitCode {
        let builder = ReportBuilder(classifier: try rules.classifier(context: context))
        if format.takesMany { return try exportMany(in: context, builder: builder) }
        let all = try TraceInputs.load([trace], context: context).traces
        // folded and speedscope add up the stalls of every process of a recording; chrome draws
        // one process's clock.
        guard all.count == 1 || format != .chrome else {
            throw UsageError(
                "chrome exports one trace; \(trace) holds \(all.count) (export each: "
                    + all.map(\.path).joined(separator: ", ") + ")")
        }
        let loaded = all[0]
        let stalls = builder.analyze(all).flatMap { $0 }
        var out = try ChunkedOutput(output, context: context)
        switch format {
        case .chrome:
            // A full-mode trace's callouts are read again from its bytes as they are drawn.
            ChromeTraceExporter.write(
                loaded, stalls: stalls,
                records: loaded.trace.calloutCount > 0 ? try bytes(of: loaded, context: context) : nil,
                to: &out)
        case .folded: out.write(FoldedStacksExporter.export(stalls, traces: all))
        case .speedscope: SpeedscopeExporter.write(stalls, name: trace, traces: all, to: &out)
        case .jsonl, .otlpJSON, .pprof: preconditionFailure("exported by exportMany")
        }
        try out.finish()
        if let note = ExportNotes.stallsWithoutSamples(stalls, chrome: format == .chrome) {
            context.printError("note: \(note)")
        }
        if case .file(let path) = output {
            context.printError("wrote \(path) (\(format.rawValue), \(stalls.count) stalls)")
        }
        return .success
    }

    /// The bytes of `loaded`'s file, or of standard input (read once, so the same bytes).
    private func bytes(of loaded: LoadedTrace, context: CommandContext) throws -> [UInt8] {
        guard loaded.path != TraceInputs.standardInputName else {
            return try TraceInputs.readStandardInput(context: context)
        }
        return try TraceLoader.readFile(loaded.path).mapError { CommandFailure($0.description) }.get()
    }
}
