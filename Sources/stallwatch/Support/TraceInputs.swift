import Dispatch
import StallwatchAnalysis
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
/// - the same file named twice (`a.swtrace ./a.swtrace`, a hard link), or a copy of one
///   recording (the same trace id in its origin record), is read once, with a `warning:` line,
///   so it is not counted twice.
///
/// Call from the command's thread.
enum TraceInputs {
    struct Loaded {
        /// The traces read, in input order; empty when a builder added them up without keeping
        /// their stalls (the tally holds what a report needs).
        var traces: [LoadedTrace]
        /// Whether a corrupt region was skipped or a file was unreadable (so the command must
        /// exit 2 after its output).
        var damaged: Bool
        /// The inputs that could not be read (only `allowCorrupt` callers get here with some).
        var unreadable: [StallReport.Unreadable] = []
        /// `traces[i]`'s stalls analyzed, when `load` was given a builder to keep them for;
        /// else empty.
        var analyzed: [[AnalyzedStall]] = []
        /// The traces added up, when `load` was given a builder: what its report takes.
        var tallied: TalliedTraces?
        /// The warnings printed for truncated traces, in input order.
        var warnings: [String] = []
    }

    /// Reads `paths`; with `builder`, also analyzes each trace as it is read and adds it up
    /// (`ReportBuilder.loadAndTally`), keeping the analyzed stalls only when `keepStalls`.
    static func load(
        _ paths: [String], context: CommandContext, includeCallouts: Bool = false, busyTime: Bool = false,
        allowCorrupt: Bool = false,
        countOnce: Bool = true, tallyingWith builder: ReportBuilder? = nil, keepStalls: Bool = false
    ) throws(CommandFailure) -> Loaded {
        let expanded = TraceLoader.expand(paths)
        if expanded.isEmpty { throw CommandFailure("no *\(TraceLoader.traceExtension) files in the given directories") }
        // `diff A A` compares a trace with itself on purpose; everything else adds traces up.
        let paths = countOnce ? distinct(expanded, context: context) : expanded
        let standardInput = paths.contains(standardInputName) ? try readStandardInput(context: context) : nil
        var progress: ProgressBar?
        if context.errorIsTerminal {
            let files = paths.filter { $0 != standardInputName }
            progress = ProgressBar(
                sink: context.standardError, total: files.reduce(0) { $0 + TraceLoader.size(of: $1) })
        }
        let bar = progress
        let workers = TraceLoader.availableCores
        // What each input lost, found by the thread that read it (so the results need not be
        // taken apart again here: that copied every trace).
        let damage = Locked([Damage](repeating: Damage(), count: paths.count))
        // Input `index`, from its file or from standard input (read once, however often given).
        let read: @Sendable (Int) -> Result<LoadedTrace, TraceLoadError> = { index in
            let result =
                paths[index] == standardInputName
                ? TraceLoader.load(
                    bytes: standardInput ?? [], path: paths[index], includeCallouts: includeCallouts,
                    busyTime: busyTime, workers: 1)
                : TraceLoader.load(
                    path: paths[index], includeCallouts: includeCallouts, busyTime: busyTime, workers: workers)
            if case .success(let trace) = result {
                if paths[index] != standardInputName { bar?.advance(by: trace.byteCount) }
                let found = Damage(
                    corrupt: trace.corruptRegions.map(\.description), truncation: trace.truncation?.description)
                if !found.corrupt.isEmpty || found.truncation != nil { damage.withLock { $0[index] = found } }
            }
            return result
        }
        // With a builder, each trace is analyzed and added up by the thread that read it.
        var tallied: TalliedTraces?
        var results: [Result<LoadedTrace, TraceLoadError>] = []
        if let builder {
            tallied = builder.tally(paths.count, keepStalls: keepStalls, load: read)
        } else {
            results = TraceLoader.load(paths.count, workers: workers, read)
        }
        progress?.finish()
        var fatal: [String] = []
        var unreadable: [StallReport.Unreadable] = []
        var corrupt: [String] = []
        var warnings: [String] = []
        var traces: [LoadedTrace] = []
        var analyzed: [[AnalyzedStall]] = []
        var readCount = 0
        let keepTraces = builder == nil || keepStalls
        traces.reserveCapacity(keepTraces ? paths.count : 0)
        analyzed.reserveCapacity(keepStalls ? paths.count : 0)
        let damaged = damage.withLock { $0 }
        // Each result read where it lies (passed, each was copied), the trace itself only when
        // kept.
        func take(_ result: UnsafePointer<Result<LoadedTrace, TraceLoadError>>, index: Int) {
            if case .failure(let error) = result.pointee {
                fatal.append(error.description)
                unreadable.append(StallReport.Unreadable(error))
                return
            }
            readCount += 1
            if keepTraces, case .success(let trace) = result.pointee { traces.append(trace) }
            if keepStalls, let tallied { analyzed.append(tallied.analyzed[index]) }
            corrupt += damaged[index].corrupt
            if let truncation = damaged[index].truncation {
                warnings.append("warning: \(truncation); using the whole records before it")
                context.printError(warnings[warnings.count - 1])
            }
        }
        (tallied?.results ?? results).withUnsafeBufferPointer { taken in
            guard let base = taken.baseAddress else { return }
            for index in taken.indices { take(base + index, index: index) }
        }
        if !fatal.isEmpty && (!allowCorrupt || readCount == 0) { throw CommandFailure(fatal + corrupt) }
        if !corrupt.isEmpty || !fatal.isEmpty {
            guard allowCorrupt else { throw CommandFailure(corrupt) }
            for line in fatal + corrupt { context.printError("Error: \(line)") }
        }
        return Loaded(
            traces: traces, damaged: !corrupt.isEmpty || !fatal.isEmpty, unreadable: unreadable, analyzed: analyzed,
            tallied: tallied, warnings: warnings)
    }

    /// What an input that was read lost: its corrupt regions and its truncation, as messages.
    private struct Damage: Sendable {
        var corrupt: [String] = []
        var truncation: String?
    }

    /// The path that means standard input.
    static let standardInputName = "-"

    /// `paths` with every file after its first mention left out (same device and inode, or
    /// `-` again), each with a warning; paths that cannot be examined stay (loading reports
    /// them).
    static func distinct(_ paths: [String], context: CommandContext) -> [String] {
        // Every file examined on every core, in runs: a `stat` each, before any file is read.
        // And each file's trace id, from its first records.
        let identities = Locked([(file: FileIdentity?, trace: [UInt8]?)](repeating: (nil, nil), count: paths.count))
        let run = 256
        DispatchQueue.concurrentPerform(iterations: (paths.count + run - 1) / run) { chunk in
            let range = chunk * run..<min(paths.count, (chunk + 1) * run)
            let found = range.map { (identity(of: paths[$0]), traceID(of: paths[$0])) }
            identities.withLock { $0.replaceSubrange(range, with: found) }
        }
        var seen: [FileIdentity: String] = [:]
        var recordings: [[UInt8]: String] = [:]
        seen.reserveCapacity(paths.count)
        var result: [String] = []
        for (path, identity) in zip(paths, identities.withLock { $0 }) {
            if let file = identity.file {
                if let first = seen[file] {
                    let same = first == path ? "given twice" : "the same file as \(first)"
                    context.printError("warning: \(path) is \(same); counted once")
                    continue
                }
                seen[file] = path
            }
            if let trace = identity.trace {
                if let first = recordings[trace] {
                    let id = trace.prefix(4).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
                    context.printError(
                        "warning: \(path) is a copy of \(first) (the same recording, trace id \(id)…); counted once")
                    continue
                }
                recordings[trace] = path
            }
            result.append(path)
        }
        return result
    }

    /// The trace id in the origin record at the start of the trace file at `path`, nil for
    /// standard input, a file that cannot be read, or a trace without one. The origin follows
    /// the header, so the first kilobyte holds it.
    private static func traceID(of path: String) -> [UInt8]? {
        guard path != standardInputName else { return nil }
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        // Read straight into the decoder's bytes: no zero fill, no copy of the part read.
        let head = [UInt8](unsafeUninitializedCapacity: 1024) { buffer, initialized in
            initialized = max(0, pread(descriptor, buffer.baseAddress, buffer.count, 0))
        }
        guard !head.isEmpty else { return nil }
        var decoder = TraceDecoder(head)
        for _ in 0..<8 {
            guard let record = decoder.next() else { return nil }
            if case .origin(let origin) = record { return origin.traceID.isEmpty ? nil : origin.traceID }
        }
        return nil
    }

    private struct FileIdentity: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
    }

    /// The device and inode of the file at `path` (standard input's own for `-`), nil when it
    /// cannot be examined.
    private static func identity(of path: String) -> FileIdentity? {
        if path == standardInputName { return FileIdentity(device: UInt64.max, inode: UInt64.max) }
        var info = stat()
        return stat(path, &info) == 0 ? FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)) : nil
    }

    /// All of standard input, or an error naming it.
    static func readStandardInput(context: CommandContext) throws(CommandFailure) -> [UInt8] {
        guard let bytes = context.standardInput.read() else {
            if errno == EFBIG {
                throw CommandFailure(
                    "-: standard input holds more than \(InputSource.standardInputLimit >> 30) GiB; "
                        + "save it to a file and name the file")
            }
            throw CommandFailure("-: byte 0: cannot read standard input (\(String(cString: strerror(errno))))")
        }
        return bytes
    }
}
