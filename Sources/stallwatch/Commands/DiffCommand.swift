import StallwatchReport

/// `stallwatch diff BASE NEW [--threshold PCT] [--json]`: how stall signatures changed.
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Compare the stall signatures of two traces.",
        discussion: """
            A signature is worse when its total stall time or its stall count grew by more than \
            the threshold (in percent of the base), better when one of them shrank by more and \
            neither grew. Exits 0 whatever the result; use 'stallwatch gate' to fail a build.
            """)

    /// The baseline trace.
    @Argument(help: "The baseline trace.")
    var base: String

    /// The trace compared with it.
    @Argument(help: "The trace to compare with it.")
    var new: String

    /// The change that counts, in percent of the base.
    @Option(valueName: "pct", help: "The change that counts, in percent.")
    var threshold = 10.0

    /// Whether to print JSON.
    @Flag(help: "Print the diff as JSON (schema: docs/cli.md).")
    var json = false

    /// Reads both traces and prints the diff.
    func run(in context: CommandContext) throws -> ExitCode {
        let loaded = try TraceInputs.load([base, new], context: context, countOnce: false).traces
        let analyzed = ReportBuilder().analyze(loaded)
        let diff = SignatureDiff(
            base: ReportBuilder.signatures(analyzed[0]), new: ReportBuilder.signatures(analyzed[1]),
            basePaths: [base], newPaths: [new], thresholdPercent: threshold)
        context.standardOutput.write(json ? try JSONOutput.encode(diff) : diff.render(colour: context.usesColour))
        return .success
    }
}
