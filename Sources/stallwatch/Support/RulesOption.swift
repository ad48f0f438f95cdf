import StallwatchAnalysis
import StallwatchCore

/// `--rules FILE` of the commands that classify samples (`report`, `show`, `export`, `diff`,
/// `gate`): the file's rules go before the built-in ones (`Classifier(rulesFile:)`). Without
/// the option, `STALLWATCH_RULES` names the file, so a CI job or a shell sets it once. A trace
/// keeps every sample's stack and kernel facts, not a verdict, so rules apply whenever a trace
/// is read.
///
/// Declared once here and included with `@OptionGroup var rules: RulesOption`. Call from the
/// command's thread.
struct RulesOption: ParsableArguments {
    /// The variable read when `--rules` is not given.
    static let environmentVariable = StallwatchEnvironment.rules

    /// `--rules`: the app's own classification rules.
    @Option(
        valueName: "file",
        help: "Classify with this JSON rules file's rules first (default: $\(RulesOption.environmentVariable)).")
    var rules: String?

    /// The classifier for `--rules` (else the variable's file, else the built-in rules); a file
    /// that cannot be read or decoded is one error line naming the file, line and problem.
    func classifier(context: CommandContext) throws(CommandFailure) -> Classifier {
        let environment = context.environment[Self.environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
        guard let file = rules ?? environment else { return Classifier() }
        do {
            return try Classifier(rulesFile: file)
        } catch {
            throw CommandFailure("\(error)" + (rules == nil ? " (named by \(Self.environmentVariable))" : ""))
        }
    }
}
