import StallwatchReport

/// `stallwatch diff BASE NEW [--threshold PCT] [--json]`: how stall signatures changed; BASE and
/// NEW are traces or directories of traces (a baseline fleet against a candidate fleet).
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Compare the stall signatures of two traces or directories.",
        discussion: """
            A signature is worse when its total stall time or its stall count grew by more than \
            the threshold (in percent of the base), better when one of them shrank by more and \
            neither grew. Exits 0 whatever the result; use 'stallwatch gate' to fail a build.
            """)

    /// The baseline trace.
    @Argument(help: "The baseline trace or directory.")
    var base: String

    /// The trace compared with it.
    @Argument(help: "The trace or directory to compare with it.")
    var new: String

    /// The change that counts, in percent of the base.
    @Option(valueName: "pct", help: "The change that counts, in percent.")
    var threshold = 10.0

    /// `--rules`: the app's own classification rules.
    @OptionGroup var rules: RulesOption

    /// Whether to print JSON.
    @Flag(help: "Print the diff as JSON (schema: docs/cli.md).")
    var json = false

    /// Reads both traces and prints the diff.
    func run(in context: CommandContext) throws -> ExitCode {
        // Each side read and added up as `report` does, every signature kept.
        let builder = ReportBuilder(classifier: try rules.classifier(context: context))
        func signatures(_ path: String) throws -> [StallReport.Signature] {
            let loaded = try TraceInputs.load([path], context: context, tallyingWith: builder)
            defer { context.keepUntilExit(loaded) }
            return builder.report(loaded.tallied ?? TalliedTraces(), top: .max).signatures
        }
        let diff = SignatureDiff(
            base: try signatures(base), new: try signatures(new), basePaths: [base], newPaths: [new],
            thresholdPercent: threshold)
        context.standardOutput.write(json ? try JSONOutput.encode(diff) : diff.render(colour: context.usesColour))
        return .success
    }
}
