import StallwatchCore
import StallwatchReport

/// `stallwatch show T --stall N`: one stall and its samples as a timeline.
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show one stall and its samples as a timeline.")

    /// The trace file.
    @Argument(help: "The trace file to read.")
    var trace: String

    /// The stall's id.
    @Option(valueName: "id", help: "The stall's id (as listed by 'stallwatch report').")
    var stall: UInt64

    /// Reads the trace and prints the stall.
    func run(in context: CommandContext) throws -> ExitCode {
        let loaded = try TraceInputs.load([trace], context: context).traces[0]
        guard let stall = loaded.trace.stalls.first(where: { $0.id == self.stall }) else {
            let ids = loaded.trace.stalls.map { String($0.id) }
            let known = ids.isEmpty ? "it has no stalls" : "its stalls are " + ids.prefix(20).joined(separator: ", ")
            throw CommandFailure("\(trace): no stall with id \(self.stall) (\(known)\(ids.count > 20 ? ", …" : ""))")
        }
        let budget = loaded.trace.header?.thresholds.budget ?? TierThresholds.default.budget
        let analyzed = AnalyzedStall(stall, tracePath: trace, budget: budget, classifier: Classifier())
        context.standardOutput.write(StallText.render(analyzed, colour: context.usesColour))
        return .success
    }
}
