// The command line every remedy sample takes: `--fixed` picks the remedy, `--seconds S` the
// run length (CI-sized by default), `--help` the usage.
import Foundation

/// What a sample was asked to do. A plain value; use it on any thread.
public struct SampleOptions: Sendable, Equatable {
    /// Run the remedy instead of the blocking code.
    public var fixed: Bool
    /// How long the workload runs on the loop, in seconds.
    public var seconds: Double

    /// `"fixed"` or `"blocking"`, as the summary and the table print it.
    public var variant: String { fixed ? "fixed" : "blocking" }

    /// Options with these values.
    public init(fixed: Bool = false, seconds: Double = 2) {
        self.fixed = fixed
        self.seconds = seconds
    }

    /// Parses `arguments` (without the program name); `--fixed` only where the sample has a fixed
    /// variant. Returns the usage problem, if any.
    public static func parse(
        _ arguments: [String], defaultSeconds: Double, allowsFixed: Bool = true
    ) -> Result<SampleOptions, UsageError> {
        var options = SampleOptions(seconds: defaultSeconds)
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--fixed" where allowsFixed: options.fixed = true
            case "--seconds":
                guard let text = rest.popFirst() else { return .failure(UsageError("--seconds needs a value")) }
                guard let value = Double(text), value > 0, value <= 600 else {
                    return .failure(UsageError("--seconds must be a number in (0, 600], got \(text)"))
                }
                options.seconds = value
            case "-h", "--help": return .failure(UsageError(nil))
            default: return .failure(UsageError("unknown argument \(argument)"))
            }
        }
        return .success(options)
    }

    /// The options of this process, or the usage on stderr and exit 2 (0 for `--help`).
    static func fromCommandLine(sample: String, defaultSeconds: Double, allowsFixed: Bool) -> SampleOptions {
        switch parse(Array(CommandLine.arguments.dropFirst()), defaultSeconds: defaultSeconds, allowsFixed: allowsFixed)
        {
        case .success(let options): return options
        case .failure(let error):
            let fixedLine = allowsFixed ? "\n  --fixed       run the remedy instead of the blocking code" : ""
            let usage = """
                USAGE: \(sample)\(allowsFixed ? " [--fixed]" : "") [--seconds S]\(fixedLine)
                  --seconds S   run the workload for S seconds (default \(defaultSeconds))
                Records to $STALLWATCH_TRACE if set (stallwatch record sets it), else to a temporary file.

                """
            guard let message = error.message else {
                print(usage, terminator: "")
                exit(0)
            }
            FileHandle.standardError.write(Data("Error: \(message)\n\(usage)".utf8))
            exit(2)
        }
    }
}

/// A bad command line; `message` is nil for `--help`.
public struct UsageError: Error, Sendable, Equatable {
    /// What was wrong.
    public var message: String?

    /// An error saying `message`.
    public init(_ message: String?) { self.message = message }
}
