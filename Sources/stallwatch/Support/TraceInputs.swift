import StallwatchCore
import StallwatchReport

#if canImport(Glibc)
    import Glibc
#endif

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
/// - `-` is standard input, read to its end (once, however often it is given);
/// - the same file named twice (`a.swtrace ./a.swtrace`, a hard link) is read once, with a
///   `warning:` line, so it is not counted twice.
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
        /// `traces[i]`'s stalls analyzed, when `load` was given a builder to analyze with; else
        /// empty.
        var analyzed: [[AnalyzedStall]] = []
    }

    static func load(
        _ paths: [String], context: CommandContext, includeCallouts: Bool = false, allowCorrupt: Bool = false,
        countOnce: Bool = true, analyzingWith builder: ReportBuilder? = nil
    ) throws(CommandFailure) -> Loaded {
        let expanded = TraceLoader.expand(paths)
        if expanded.isEmpty { throw CommandFailure("no *\(TraceLoader.traceExtension) files in the given directories") }
        // `diff A A` compares a trace with itself on purpose; everything else adds traces up.
        let paths = countOnce ? distinct(expanded, context: context) : expanded
        let files = paths.filter { $0 != standardInputName }
        var progress: ProgressBar?
        if context.errorIsTerminal {
            progress = ProgressBar(
                sink: context.standardError, total: files.reduce(0) { $0 + TraceLoader.size(of: $1) })
        }
        var advance: (@Sendable (Int) -> Void)?
        if let progress { advance = { progress.advance(by: $0) } }
        // With a builder, each trace is analyzed by the thread that read it.
        let fileResults: [Result<(trace: LoadedTrace, stalls: [AnalyzedStall]), TraceLoadError>]
        if let builder {
            fileResults = builder.loadAndAnalyze(paths: files, includeCallouts: includeCallouts, progress: advance)
        } else {
            fileResults = TraceLoader.load(paths: files, includeCallouts: includeCallouts, progress: advance)
                .map { $0.map { (trace: $0, stalls: []) } }
        }
        progress?.finish()
        var fatal: [String] = []
        var unreadable: [StallReport.Unreadable] = []
        var corrupt: [String] = []
        var traces: [LoadedTrace] = []
        var analyzed: [[AnalyzedStall]] = []
        traces.reserveCapacity(paths.count)
        analyzed.reserveCapacity(builder == nil ? 0 : paths.count)
        // Each result taken where it lies (iterating the results copied every trace twice).
        func take(_ result: borrowing Result<(trace: LoadedTrace, stalls: [AnalyzedStall]), TraceLoadError>) {
            switch result {
            case .failure(let error):
                fatal.append(error.description)
                unreadable.append(StallReport.Unreadable(path: error.path, reason: error.description))
            case .success(let loaded):
                traces.append(loaded.trace)
                if builder != nil { analyzed.append(loaded.stalls) }
                corrupt += loaded.trace.corruptRegions.map(\.description)
                if let truncation = loaded.trace.truncation {
                    context.printError("warning: \(truncation.description); using the whole records before it")
                }
            }
        }
        var standardInput: [UInt8]?
        var next = 0
        for path in paths {
            if path == standardInputName {
                if standardInput == nil { standardInput = try readStandardInput(context: context) }
                let bytes = standardInput ?? []
                take(
                    TraceLoader.load(bytes: bytes, path: path, includeCallouts: includeCallouts).map {
                        (trace: $0, stalls: builder?.analyze([$0])[0] ?? [])
                    })
            } else {
                take(fileResults[next])
                next += 1
            }
        }
        if !fatal.isEmpty && (!allowCorrupt || traces.isEmpty) { throw CommandFailure(fatal + corrupt) }
        if !corrupt.isEmpty || !fatal.isEmpty {
            guard allowCorrupt else { throw CommandFailure(corrupt) }
            for line in fatal + corrupt { context.printError("Error: \(line)") }
        }
        return Loaded(
            traces: traces, damaged: !corrupt.isEmpty || !fatal.isEmpty, unreadable: unreadable, analyzed: analyzed)
    }

    /// The path that means standard input.
    static let standardInputName = "-"

    /// `paths` with every file after its first mention left out (same device and inode, or
    /// `-` again), each with a warning; paths that cannot be examined stay (loading reports
    /// them).
    static func distinct(_ paths: [String], context: CommandContext) -> [String] {
        var seen: [FileIdentity: String] = [:]
        var result: [String] = []
        for path in paths {
            let identity: FileIdentity?
            if path == standardInputName {
                identity = FileIdentity(device: UInt64.max, inode: UInt64.max)
            } else {
                var info = stat()
                identity =
                    stat(path, &info) == 0 ? FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)) : nil
            }
            if let identity {
                if let first = seen[identity] {
                    let same = first == path ? "given twice" : "the same file as \(first)"
                    context.printError("warning: \(path) is \(same); counted once")
                    continue
                }
                seen[identity] = path
            }
            result.append(path)
        }
        return result
    }

    private struct FileIdentity: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    /// All of standard input, or an error naming it.
    static func readStandardInput(context: CommandContext) throws(CommandFailure) -> [UInt8] {
        guard let bytes = context.standardInput.read() else {
            throw CommandFailure("-: byte 0: cannot read standard input (\(String(cString: strerror(errno))))")
        }
        return bytes
    }
}
