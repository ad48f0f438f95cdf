/// A `stallwatch` subcommand, in swift-argument-parser's shape: a type whose stored
/// `@Option`, `@Flag` and `@Argument` properties are its command line, each declared once,
/// typed. Parsing, the usage line and `--help` all come from those declarations
/// (`CommandParser`); there is nothing else to keep in step.
///
/// The runner makes the command with `init()`, fills its properties from the command line,
/// calls `validate()`, then `run(in:)`, all on one thread.
protocol ParsableCommand {
    /// The name, abstract and discussion (the arguments come from the properties).
    static var configuration: CommandConfiguration { get }

    /// A command with every property at its default, before parsing.
    init()

    /// Checks what parsing cannot (ranges, options that go together); throws `UsageError`.
    /// Runs before `run(in:)`.
    func validate() throws(UsageError)

    /// Does the work, writing to `context`'s streams; returns the process's exit code.
    /// Throws `CommandFailure` for unreadable input (exit 2) or `UsageError`.
    func run(in context: CommandContext) throws -> ExitCode
}

extension ParsableCommand {
    /// Nothing to check by default.
    func validate() throws(UsageError) {}
}

/// What a command says about itself besides its arguments.
///
/// A plain value; use it on any thread.
struct CommandConfiguration: Sendable {
    /// The name on the command line (`report`).
    var commandName: String
    /// One sentence for OVERVIEW and the subcommand list.
    var abstract: String
    /// Paragraphs printed after OVERVIEW, if any.
    var discussion: String

    /// Creates a configuration.
    init(commandName: String, abstract: String, discussion: String = "") {
        self.commandName = commandName
        self.abstract = abstract
        self.discussion = discussion
    }
}

/// A process exit status, as swift-argument-parser's `ExitCode`.
///
/// A plain value; use it on any thread.
package struct ExitCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The status.
    package var rawValue: Int32

    /// Creates an exit code.
    package init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// Creates an exit code.
    init(_ code: Int32) {
        self.rawValue = code
    }

    /// 0: done, or the gate passed.
    static let success = ExitCode(0)
    /// 1: the gate failed.
    static let failure = ExitCode(1)
    /// 2: a usage error, or input that could not be read.
    static let validationFailure = ExitCode(2)

    /// The number.
    package var description: String { String(rawValue) }
}

/// A mistake on the command line: printed with the command's usage, exit 2.
///
/// A plain value; use it on any thread.
struct UsageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, one line.
    var message: String

    /// Creates a usage error.
    init(_ message: String) {
        self.message = message
    }

    /// The message.
    var description: String { message }

    /// `The value 'TEXT' is invalid for 'SPELLING': expected EXPECTED`.
    static func invalidValue(_ text: String, for spelling: String, expected: String) -> UsageError {
        UsageError("The value '\(text)' is invalid for '\(spelling)': expected \(expected)")
    }
}

/// A command that could not do its work (unreadable or corrupt input, an unwritable output):
/// the runner prints `message` (one line per entry) on stderr and exits with `exitCode`.
///
/// A plain value; use it on any thread.
struct CommandFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// One line each, e.g. `app.swtrace: byte 4242: the input ends inside a sample record; …`.
    var lines: [String]
    /// The exit code (2 unless said otherwise).
    var exitCode: ExitCode

    /// Creates a failure.
    init(_ lines: [String], exitCode: ExitCode = .validationFailure) {
        self.lines = lines
        self.exitCode = exitCode
    }

    /// Creates a one-line failure.
    init(_ line: String, exitCode: ExitCode = .validationFailure) {
        self.init([line], exitCode: exitCode)
    }

    /// The lines, joined.
    var description: String { lines.joined(separator: "\n") }
}
