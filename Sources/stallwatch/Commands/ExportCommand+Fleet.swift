import StallwatchReport

#if canImport(Glibc)
    import Glibc
#endif

extension ExportCommand {
    /// jsonl, otlp-json and pprof: every trace of the input (a directory or a file) into one
    /// output, classified by `builder`.
    func exportMany(in context: CommandContext, builder: ReportBuilder) throws -> ExitCode {
        if format == .pprof, case .standardOutput = output {
            throw UsageError("pprof is binary: give a file with -o")
        }
        let loaded = try TraceInputs.load(
            [trace], context: context, includeCallouts: format == .otlpJSON && callouts
        ).traces
        let analyzed = builder.analyze(loaded)
        let inputs = zip(loaded, analyzed).map { JSONLinesExporter.Input(trace: $0, stalls: $1) }
        let stallCount = analyzed.reduce(0) { $0 + $1.count }
        let summary = "\(format.rawValue), \(plural(loaded.count, "trace")), \(plural(stallCount, "stall"))"
        switch format {
        case .pprof:
            guard case .file(let path) = output else { return .validationFailure }
            try writeBytes(path, PprofExporter.export(inputs))
            context.printError("wrote \(path) (\(summary))")
            return .success
        case .jsonl, .otlpJSON:
            var out = try ChunkedOutput(output, context: context)
            if format == .jsonl {
                JSONLinesExporter.write(inputs, samples: samples, to: &out)
            } else {
                OTLPJSONExporter.write(inputs, callouts: callouts, to: &out)
            }
            try out.finish()
            if case .file(let path) = output { context.printError("wrote \(path) (\(summary))") }
            return .success
        case .chrome, .folded, .speedscope:
            preconditionFailure("one trace; exported by run")
        }
    }

    private func plural(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
}

/// Writes `bytes` to `path`, replacing it; throws a one-line `CommandFailure` naming the path.
func writeBytes(_ path: String, _ bytes: [UInt8]) throws(CommandFailure) {
    guard let file = fopen(path, "w") else {
        throw CommandFailure("\(path): cannot write (\(String(cString: strerror(errno))))")
    }
    let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
    let closed = fclose(file)
    if written != bytes.count || closed != 0 {
        throw CommandFailure("\(path): cannot write (\(String(cString: strerror(errno))))")
    }
}
