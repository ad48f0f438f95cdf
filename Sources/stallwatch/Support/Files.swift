import StallwatchReport

#if canImport(Glibc)
    import Glibc
#endif

/// Writes `text` to `path`, replacing it; throws a one-line `CommandFailure` naming the path.
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

/// Which file is at a path and when it last changed: `record` compares the stamps from before
/// and after the run to tell a new trace from one an earlier run left.
struct FileStamp: Equatable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modifiedSeconds: Int
    var modifiedNanoseconds: Int

    /// The stamp of the file at `path`, `nil` if there is none.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modifiedSeconds = info.st_mtim.tv_sec
        modifiedNanoseconds = info.st_mtim.tv_nsec
    }
}

/// Where a command writes its output: `-o FILE`, or `-o -` for standard output.
enum OutputDestination: Sendable, Hashable, ExpressibleByArgument {
    /// `-`: the command's standard output.
    case standardOutput
    /// A file, replaced.
    case file(String)

    init?(argument: String) {
        self = argument == "-" ? .standardOutput : .file(argument)
    }

    static var expectation: String { "a file, or '-' for standard output" }

    var defaultValueDescription: String {
        switch self {
        case .standardOutput: "-"
        case .file(let path): path
        }
    }
}

/// Refuses an output that is one of the command's input traces (or a trace under an input
/// directory): writing it would destroy what the command reads. `outputs` pairs each path
/// with its option's spelling; an output that does not exist yet is never an input.
func refuseOverwritingInputs(_ outputs: [(option: String, path: String)], inputs: [String]) throws(UsageError) {
    let existing = outputs.compactMap { output in FileStamp(path: output.path).map { (output, $0) } }
    guard !existing.isEmpty else { return }
    for input in TraceLoader.expand(inputs) where input != TraceInputs.standardInputName {
        guard let stamp = FileStamp(path: input) else { continue }
        for (output, written) in existing where written.device == stamp.device && written.inode == stamp.inode {
            throw UsageError("\(output.option) \(output.path) is the input \(input): refusing to overwrite it")
        }
    }
}

/// A command's large output (an export, the HTML page) on its way to its destination, handed
/// on in pieces of about a megabyte as it is made, so the whole is never held in memory.
/// `finish()` writes the rest and says whether it all got there.
///
/// Use it from the command's thread.
struct ChunkedOutput: TextOutputStream {
    /// How much is kept before it is handed on.
    static let pieceSize = 1 << 20

    private enum Target {
        case sink(any TextSink)
        case file(UnsafeMutablePointer<FILE>, path: String)
    }

    private let target: Target
    private var buffer = ""
    private var failed = false
    /// The bytes handed on so far (all of them after `finish()`).
    private(set) var byteCount = 0

    /// An output to `destination`: the file, replaced, or the command's standard output.
    init(_ destination: OutputDestination, context: CommandContext) throws(CommandFailure) {
        switch destination {
        case .standardOutput:
            target = .sink(context.standardOutput)
        case .file(let path):
            guard let file = fopen(path, "w") else {
                throw CommandFailure("\(path): cannot write (\(String(cString: strerror(errno))))")
            }
            target = .file(file, path: path)
        }
        buffer.reserveCapacity(Self.pieceSize + (64 << 10))
    }

    mutating func write(_ string: String) {
        buffer += string
        if buffer.utf8.count >= Self.pieceSize { handOn() }
    }

    private mutating func handOn() {
        guard !buffer.isEmpty else { return }
        byteCount += buffer.utf8.count
        switch target {
        case .sink(let sink):
            sink.write(buffer)
        case .file(let file, _):
            let count = buffer.utf8.count
            if buffer.withUTF8({ fwrite($0.baseAddress, 1, $0.count, file) }) != count { failed = true }
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Hands on the rest and closes the file; throws a one-line `CommandFailure` naming it if
    /// any of it could not be written.
    mutating func finish() throws(CommandFailure) {
        handOn()
        guard case .file(let file, let path) = target else { return }
        if fclose(file) != 0 || failed {
            throw CommandFailure("\(path): cannot write (\(String(cString: strerror(errno))))")
        }
    }
}
