import StallwatchCore
import StallwatchReport

#if canImport(Glibc)
    import Glibc
#endif

/// `stallwatch demo [--budget MS] [--keep]`: runs the built-in stalling workload and prints
/// the report of the trace it recorded.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo", abstract: "Run a built-in stalling workload and print its report.")

    /// The frame budget; the monitor's default when not given.
    @Option(
        valueName: "ms", help: "The frame budget in milliseconds.",
        defaultDescription: TierThresholds.default.budget.defaultValueDescription)
    var budget: Duration?

    /// Whether to keep the trace file.
    @Flag(help: "Keep the trace file (its path is printed).")
    var keep = false

    /// A budget of 0 is no budget.
    func validate() throws(UsageError) {
        if let budget, budget <= .zero { throw $budget.invalid("a number above 0") }
    }

    /// Runs the workload, then reports on its trace.
    func run(in context: CommandContext) throws -> ExitCode {
        guard let demo = context.demo else { throw CommandFailure("this stallwatch binary has no demo workload") }
        let path = try demo(budget.map { Double($0.nanoseconds) / 1e6 }, keep)
        defer { if !keep { unlink(path) } }
        let loaded = try TraceInputs.load([path], context: context, allowCorrupt: true)
        context.standardOutput.write(
            ReportText.render(ReportBuilder().report(loaded.traces, top: 10), colour: context.usesColour))
        if keep { context.print("trace kept at \(path)") }
        return loaded.damaged ? .validationFailure : .success
    }
}
