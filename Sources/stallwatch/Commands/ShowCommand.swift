import StallwatchCore
import StallwatchReport

/// `stallwatch show T [--stall N] [--json]`: one stall and its samples as a timeline, or the
/// list of the trace's stalls.
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "List a trace's stalls, or show one as a timeline.",
        discussion: """
            Without --stall, lists the trace's stalls (id, tier, duration, category, the share of \
            the stall's time its representative stack stands for, site and signature). With \
            --stall, shows that stall's callout, breakdown, every sample and the representative \
            stack. Lines fit the terminal (COLUMNS, else its width, else 100 columns).
            """)

    /// The trace file.
    @Argument(help: "The trace file to read ('-' for standard input).")
    var trace: String

    /// The stall's id, if one is to be shown.
    @Option(valueName: "id", help: "The stall's id (as listed without it).")
    var stall: UInt64?

    /// Whether to print JSON.
    @Flag(help: "Print the stall (or the list) as JSON (schema: docs/cli.md).")
    var json = false

    /// Whether lines may be as long as their content.
    @Flag(help: "Do not fit lines to the terminal: show long names in full.")
    var wide = false

    /// Whether frames show their full symbols.
    @Flag(help: "Show frames by their full demangled symbols.")
    var verbose = false

    /// `--rules`: the app's own classification rules.
    @Option(valueName: "file", help: RulesOption.help)
    var rules: String?

    /// Reads the trace and prints the stall or the list.
    func run(in context: CommandContext) throws -> ExitCode {
        let classifier = try RulesOption.classifier(rules, context: context)
        let loaded = try TraceInputs.load([trace], context: context).traces[0]
        let options = context.textOptions(wide: wide, verbose: verbose)
        guard let id = self.stall else {
            let stalls = loaded.trace.stalls.map { AnalyzedStall($0, of: loaded, classifier: classifier) }
            context.standardOutput.write(
                json
                    ? try JSONOutput.encode(stalls.map(StallDetail.Summary.init))
                    : StallText.list(stalls, trace: trace, options: options))
            return .success
        }
        guard let stall = loaded.trace.stalls.first(where: { $0.id == id }) else {
            let ids = loaded.trace.stalls.map { String($0.id) }
            let known = ids.isEmpty ? "it has no stalls" : "its stalls are " + ids.prefix(20).joined(separator: ", ")
            throw CommandFailure("\(trace): no stall with id \(id) (\(known)\(ids.count > 20 ? ", …" : ""))")
        }
        let analyzed = AnalyzedStall(stall, of: loaded, classifier: classifier)
        context.standardOutput.write(
            json ? try JSONOutput.encode(StallDetail(analyzed)) : StallText.render(analyzed, options: options))
        return .success
    }
}
