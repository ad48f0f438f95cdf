#if canImport(Glibc)
    import Glibc
#endif

/// `stallwatch demo [--budget MS] [--keep]`: runs the built-in stalling workload and prints
/// the report of the trace it recorded.
public struct DemoCommand: Command {
    /// The name, abstract and arguments.
    public static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run a built-in stalling workload and print its report.",
        arguments: [
            .option("budget", valueName: "ms", help: "The frame budget in milliseconds.", defaultDescription: "16.667"),
            .flag("keep", help: "Keep the trace file (its path is printed)."),
        ])

    /// The budget, if given.
    public var budget: Double?
    /// Whether to keep the trace.
    public var keep: Bool

    /// Builds the command from parsed arguments.
    public init(parsing arguments: ParsedArguments) throws(UsageError) {
        budget = try arguments.number("budget")
        keep = arguments.flag("keep")
        if let budget, budget <= 0 { throw arguments.invalid(String(budget), "budget", "a number above 0") }
    }

    /// Runs the workload, then reports on its trace.
    public func run(in context: CommandContext) throws -> ExitCode {
        guard let demo = context.demo else { throw CommandFailure("this stallwatch binary has no demo workload") }
        let path = try demo(budget, keep)
        defer { if !keep { unlink(path) } }
        let loaded = try TraceInputs.load([path], context: context, allowCorrupt: true)
        context.standardOutput.write(
            ReportText.render(ReportBuilder().report(loaded.traces, top: 10), colour: context.usesColour))
        if keep { context.print("trace kept at \(path)") }
        return loaded.damaged ? .validationFailure : .success
    }
}
