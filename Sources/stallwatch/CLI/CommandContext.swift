import StallwatchCore
import StallwatchReport
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a command's text goes: the process's stdout/stderr, or a buffer in tests.
///
/// Implementations must be safe to call from any thread (the progress bar writes from a
/// timer thread).
package protocol TextSink: Sendable {
    /// Writes `text` as it is (no newline added).
    func write(_ text: String)
}

/// A sink that writes to a file descriptor with `write(2)`, retrying on EINTR.
///
/// Use it from any thread.
struct FileDescriptorSink: TextSink {
    /// The descriptor (1 for stdout, 2 for stderr).
    let descriptor: Int32

    /// Creates a sink for `descriptor`.
    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Writes all of `text`.
    func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }

    /// Whether the descriptor is a terminal.
    var isTerminal: Bool { isatty(descriptor) == 1 }
}

/// A sink that keeps what is written, for tests.
///
/// Use it from any thread.
package final class BufferSink: TextSink {
    private let storage = Locked("")

    /// Creates an empty buffer.
    package init() {}

    /// Appends `text`.
    package func write(_ text: String) {
        storage.withLock { $0 += text }
    }

    /// Everything written so far.
    package var text: String { storage.withLock { $0 } }
}

/// Where a command reads `-` from: the process's standard input, or bytes in tests.
///
/// Use it from any thread (it is read once, from the command's thread).
package struct InputSource: Sendable {
    /// Reads everything; `nil` when reading failed (`errno` says why).
    let read: @Sendable () -> [UInt8]?

    /// The process's standard input, read to its end once: every later read gets the same
    /// bytes (`diff - -`). Reading stops early when the first bytes are not a trace's preamble
    /// (the loader then says so) and fails with `EFBIG` past `standardInputLimit` bytes: a pipe
    /// has no size to check first.
    static let standardInput = InputSource {
        standardInputBytes.withLock { cached in
            if let cached { return cached }
            let bytes = readToEnd(descriptor: 0, limit: standardInputLimit)
            let saved = errno
            cached = .some(bytes)
            errno = saved
            return bytes
        }
    }

    /// The most `standardInput` reads: 4 GiB.
    static let standardInputLimit = 4 << 30

    /// Everything on `descriptor` up to its end, nil on a read error or past `limit` bytes
    /// (`errno` says which); only the preamble when that is not a trace's.
    static func readToEnd(descriptor: Int32, limit: Int) -> [UInt8]? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { return nil }
            if count == 0 { return bytes }
            bytes += chunk[..<count]
            if bytes.count >= 4 && !bytes.starts(with: TraceFormat.magicBytes) { return bytes }
            if bytes.count > limit {
                errno = EFBIG
                return nil
            }
        }
    }

    /// `bytes`, for tests.
    package static func bytes(_ bytes: [UInt8]) -> InputSource { InputSource { bytes } }
}

/// What a command runs with: its output streams, whether they are terminals and the
/// environment.
///
/// A plain value; use it on any thread.
package struct CommandContext: Sendable {
    /// Standard output.
    var standardOutput: any TextSink
    /// Standard error: warnings, errors, the progress bar.
    var standardError: any TextSink
    /// Whether standard output is a terminal (colour is only used then).
    var outputIsTerminal: Bool
    /// Whether standard error is a terminal (the progress bar is only drawn then).
    var errorIsTerminal: Bool
    /// The process environment (`NO_COLOR`, `COLUMNS`; `record` passes it on to its command).
    var environment: [String: String]
    /// What `-` reads: standard input.
    var standardInput: InputSource
    /// The width of standard output's terminal (`TIOCGWINSZ`), `nil` when it is not one.
    var terminalColumns: Int?
    /// Whether the process exits once the command returns (the `stallwatch` executable; not
    /// tests running commands in-process), so `keepUntilExit` need not free anything.
    var exitsAfterCommand = false

    /// Creates a context.
    package init(
        standardOutput: any TextSink, standardError: any TextSink, outputIsTerminal: Bool = false,
        errorIsTerminal: Bool = false, environment: [String: String] = [:],
        standardInput: InputSource = .bytes([]), terminalColumns: Int? = nil
    ) {
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.outputIsTerminal = outputIsTerminal
        self.errorIsTerminal = errorIsTerminal
        self.environment = environment
        self.standardInput = standardInput
        self.terminalColumns = terminalColumns
    }

    /// How wide text output may be: `COLUMNS` when set to a number, else the terminal's
    /// width, else 100 (a pipe or a file).
    var outputWidth: Int {
        if let text = environment["COLUMNS"], let columns = Int(text), columns > 0 { return columns }
        return terminalColumns ?? 100
    }

    /// The process's own stdout and stderr and environment.
    static func process() -> CommandContext {
        let output = FileDescriptorSink(descriptor: 1)
        let error = FileDescriptorSink(descriptor: 2)
        var context = CommandContext(
            standardOutput: output, standardError: error, outputIsTerminal: output.isTerminal,
            errorIsTerminal: error.isTerminal, environment: processEnvironment(), standardInput: .standardInput,
            terminalColumns: output.isTerminal ? terminalWidth(of: 1) : nil)
        context.exitsAfterCommand = true
        return context
    }

    /// Keeps `value` until the process exits when the command is the process's last work
    /// (`exitsAfterCommand`): freeing a fleet's traces and stalls object by object is work
    /// that exiting does at once. In-process callers free as usual.
    func keepUntilExit(_ value: some Sendable) {
        guard exitsAfterCommand else { return }
        keptUntilExit.withLock { $0.append(value) }
    }

    /// Whether to colour standard output: only on a terminal, and only if `NO_COLOR` is unset
    /// or empty (https://no-color.org).
    var usesColour: Bool {
        outputIsTerminal && (environment["NO_COLOR"] ?? "").isEmpty
    }

    /// Writes `text` and a newline to standard output.
    func print(_ text: String = "") {
        standardOutput.write(text + "\n")
    }

    /// Writes `text` and a newline to standard error, any control or bidirectional character
    /// in it (a file's name can hold them) shown escaped.
    func printError(_ text: String) {
        standardError.write(TerminalText.message(text) + "\n")
    }
}

func processEnvironment() -> [String: String] {
    var result: [String: String] = [:]
    var pointer = environ
    while let entry = pointer.pointee {
        let text = String(cString: entry)
        if let equals = text.firstIndex(of: "=") {
            result[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        pointer += 1
    }
    return result
}

/// The column count of the terminal on `descriptor` (`TIOCGWINSZ`), `nil` if it has none.
func terminalWidth(of descriptor: Int32) -> Int? {
    var size = winsize()
    guard ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
    return Int(size.ws_col)
}

/// What `InputSource.standardInput` read, once it has.
private let standardInputBytes = Mutex<[UInt8]??>(nil)

/// What `CommandContext.keepUntilExit` keeps.
private let keptUntilExit = Mutex<[any Sendable]>([])
