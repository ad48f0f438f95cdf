import StallwatchCore
import StallwatchReport

/// Reads a command's input traces (a directory stands for the `*.swtrace` files under it) and
/// applies the CLI's rules for damaged input:
///
/// - unreadable (cannot open or read, not a trace, newer version, no whole record): an error
///   line each, exit 2;
/// - truncated (ends inside a record, as when the recorder was killed, or in a junk tail, as
///   a crash or power loss leaves): a `warning:` line, and the whole records before it are
///   used; `report` goes on without the unreadable ones when others could be read (they are
///   listed in its fleet summary) and exits 2 after its output;
/// - corrupt (a damaged region skipped in the middle): an error line each; `report` still
///   prints what it read and then exits 2, the other commands exit 2 at once.
///
/// Call from the command's thread.
enum TraceInputs {
    struct Loaded {
        var traces: [LoadedTrace]
        /// Whether a corrupt region was skipped or a file was unreadable (so the command must
        /// exit 2 after its output).
        var damaged: Bool
        /// The inputs that could not be read (only `allowCorrupt` callers get here with some).
        var unreadable: [StallReport.Unreadable] = []
    }

    static func load(
        _ paths: [String], context: CommandContext, includeCallouts: Bool = false, allowCorrupt: Bool = false
    ) throws(CommandFailure) -> Loaded {
        let paths = TraceLoader.expand(paths)
        if paths.isEmpty { throw CommandFailure("no *\(TraceLoader.traceExtension) files in the given directories") }
        var progress: ProgressBar?
        if context.errorIsTerminal {
            progress = ProgressBar(
                sink: context.standardError, total: paths.reduce(0) { $0 + TraceLoader.size(of: $1) })
        }
        var advance: (@Sendable (Int) -> Void)?
        if let progress { advance = { progress.advance(by: $0) } }
        let results = TraceLoader.load(paths: paths, includeCallouts: includeCallouts, progress: advance)
        progress?.finish()
        var fatal: [String] = []
        var unreadable: [StallReport.Unreadable] = []
        var corrupt: [String] = []
        var traces: [LoadedTrace] = []
        for result in results {
            switch result {
            case .failure(let error):
                fatal.append(error.description)
                unreadable.append(StallReport.Unreadable(path: error.path, reason: error.description))
            case .success(let trace):
                traces.append(trace)
                corrupt += trace.corruptRegions.map(\.description)
                if let truncation = trace.truncation {
                    context.printError("warning: \(truncation.description); using the whole records before it")
                }
            }
        }
        if !fatal.isEmpty && (!allowCorrupt || traces.isEmpty) { throw CommandFailure(fatal + corrupt) }
        if !corrupt.isEmpty || !fatal.isEmpty {
            guard allowCorrupt else { throw CommandFailure(corrupt) }
            for line in fatal + corrupt { context.printError("Error: \(line)") }
        }
        return Loaded(traces: traces, damaged: !corrupt.isEmpty || !fatal.isEmpty, unreadable: unreadable)
    }
}
