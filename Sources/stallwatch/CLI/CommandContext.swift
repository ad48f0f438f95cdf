import StallwatchCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a command's text goes: the process's stdout/stderr, or a buffer in tests.
///
/// Implementations must be safe to call from any thread (the progress bar writes from a
/// timer thread).
protocol TextSink: Sendable {
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
final class BufferSink: TextSink {
    private let storage = Locked("")

    /// Creates an empty buffer.
    init() {}

    /// Appends `text`.
    func write(_ text: String) {
        storage.withLock { $0 += text }
    }

    /// Everything written so far.
    var text: String { storage.withLock { $0 } }
}

/// What a command runs with: its output streams, whether they are terminals and the
/// environment.
///
/// A plain value; use it on any thread.
struct CommandContext: Sendable {
    /// Standard output.
    var standardOutput: any TextSink
    /// Standard error: warnings, errors, the progress bar.
    var standardError: any TextSink
    /// Whether standard output is a terminal (colour is only used then).
    var outputIsTerminal: Bool
    /// Whether standard error is a terminal (the progress bar is only drawn then).
    var errorIsTerminal: Bool
    /// The process environment (`NO_COLOR`; `record` passes it on to its command).
    var environment: [String: String]

    /// Creates a context.
    init(
        standardOutput: any TextSink, standardError: any TextSink, outputIsTerminal: Bool = false,
        errorIsTerminal: Bool = false, environment: [String: String] = [:]
    ) {
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.outputIsTerminal = outputIsTerminal
        self.errorIsTerminal = errorIsTerminal
        self.environment = environment
    }

    /// The process's own stdout and stderr and environment.
    static func process() -> CommandContext {
        let output = FileDescriptorSink(descriptor: 1)
        let error = FileDescriptorSink(descriptor: 2)
        return CommandContext(
            standardOutput: output, standardError: error, outputIsTerminal: output.isTerminal,
            errorIsTerminal: error.isTerminal, environment: processEnvironment())
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

    /// Writes `text` and a newline to standard error.
    func printError(_ text: String) {
        standardError.write(text + "\n")
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
