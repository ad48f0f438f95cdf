/// `stallwatch diff BASE NEW [--threshold PCT] [--json]`: how stall signatures changed.
public struct DiffCommand: Command {
    /// The name, abstract and arguments.
    public static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Compare the stall signatures of two traces.",
        discussion: """
            A signature is worse when its total stall time or its stall count grew by more than \
            the threshold (in percent of the base), better when one of them shrank by more and \
            neither grew. Exits 0 whatever the result; use 'stallwatch gate' to fail a build.
            """,
        arguments: [
            .positional("base", help: "The baseline trace."),
            .positional("new", help: "The trace to compare with it."),
            .option(
                "threshold", valueName: "pct", help: "The change that counts, in percent.", defaultDescription: "10"),
            .flag("json", help: "Print the diff as JSON (schema: docs/cli.md)."),
        ])

    /// The baseline trace.
    public var base: String
    /// The new trace.
    public var new: String
    /// The threshold, in percent.
    public var threshold: Double
    /// Whether to print JSON.
    public var json: Bool

    /// Builds the command from parsed arguments.
    public init(parsing arguments: ParsedArguments) throws(UsageError) {
        base = arguments.value("base") ?? ""
        new = arguments.value("new") ?? ""
        threshold = try arguments.number("threshold") ?? 10
        json = arguments.flag("json")
    }

    /// Reads both traces and prints the diff.
    public func run(in context: CommandContext) throws -> ExitCode {
        let loaded = try TraceInputs.load([base, new], context: context).traces
        let analyzed = ReportBuilder().analyze(loaded)
        let diff = SignatureDiff(
            base: ReportBuilder.signatures(analyzed[0]), new: ReportBuilder.signatures(analyzed[1]),
            basePaths: [base], newPaths: [new], thresholdPercent: threshold)
        context.standardOutput.write(json ? try JSONOutput.encode(diff) : diff.render(colour: context.usesColour))
        return .success
    }
}
