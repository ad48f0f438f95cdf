/// The shape of a `stallwatch` subcommand, after swift-argument-parser's `ParsableCommand`:
/// a type that declares its name, abstract and arguments, is built from the command line,
/// validates itself, then runs.
///
/// The runner calls `init(parsing:)`, then `validate()`, then `run(in:)`, on one thread.
public protocol Command {
    /// The name, abstract, discussion and arguments (which drive parsing and `--help`).
    static var configuration: CommandConfiguration { get }

    /// Builds the command from parsed arguments; throws `UsageError` for bad values.
    init(parsing arguments: ParsedArguments) throws(UsageError)

    /// Checks combinations of options; throws `UsageError`. Runs before `run(in:)`.
    func validate() throws(UsageError)

    /// Does the work, writing to `context`'s streams; returns the process's exit code.
    /// Throws `CommandFailure` for unreadable input (exit 2) or `UsageError`.
    func run(in context: CommandContext) throws -> ExitCode
}

extension Command {
    /// Nothing to check by default.
    public func validate() throws(UsageError) {}
}

/// What a command declares about itself.
///
/// A plain value; use it on any thread.
public struct CommandConfiguration: Sendable {
    /// The name on the command line (`report`).
    public var commandName: String
    /// One sentence for OVERVIEW and the subcommand list.
    public var abstract: String
    /// Paragraphs printed after OVERVIEW, if any.
    public var discussion: String
    /// The positional arguments, options and flags, in help order (`--help` is added).
    public var arguments: [ArgumentDefinition]

    /// Creates a configuration.
    public init(
        commandName: String, abstract: String, discussion: String = "", arguments: [ArgumentDefinition] = []
    ) {
        self.commandName = commandName
        self.abstract = abstract
        self.discussion = discussion
        self.arguments = arguments
    }
}

/// A process exit status, as swift-argument-parser's `ExitCode`.
///
/// A plain value; use it on any thread.
public struct ExitCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The status.
    public var rawValue: Int32

    /// Creates an exit code.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// Creates an exit code.
    public init(_ code: Int32) {
        self.rawValue = code
    }

    /// 0: done, or the gate passed.
    public static let success = ExitCode(0)
    /// 1: the gate failed.
    public static let failure = ExitCode(1)
    /// 2: a usage error, or input that could not be read.
    public static let validationFailure = ExitCode(2)

    /// The number.
    public var description: String { String(rawValue) }
}

/// A mistake on the command line: printed with the command's usage, exit 2.
///
/// A plain value; use it on any thread.
public struct UsageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, one line.
    public var message: String

    /// Creates a usage error.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// A command that could not do its work (unreadable or corrupt input, an unwritable output):
/// the runner prints `message` (one line per entry) on stderr and exits with `exitCode`.
///
/// A plain value; use it on any thread.
public struct CommandFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// One line each, e.g. `app.swtrace: byte 4242: the input ends inside a sample record; …`.
    public var lines: [String]
    /// The exit code (2 unless said otherwise).
    public var exitCode: ExitCode

    /// Creates a failure.
    public init(_ lines: [String], exitCode: ExitCode = .validationFailure) {
        self.lines = lines
        self.exitCode = exitCode
    }

    /// Creates a one-line failure.
    public init(_ line: String, exitCode: ExitCode = .validationFailure) {
        self.init([line], exitCode: exitCode)
    }

    /// The lines, joined.
    public var description: String { lines.joined(separator: "\n") }
}
