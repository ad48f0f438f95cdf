// A command's typed properties are its command line: names, kinds and defaults come from the declarations, values arrive typed, and validate() runs before run().
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchReport
import Testing

@testable import stallwatch

private func parse<Command: ParsableCommand>(_ arguments: [String], as type: Command.Type) throws -> Command {
    guard case .command(let command) = try CommandParser.parse(arguments, as: type) else {
        Issue.record("asked for help")
        return Command()
    }
    return try #require(command as? Command)
}

@Test func propertyNamesBecomeKebabCasedOptions() {
    let definitions = CommandParser.definitions(of: GateCommand.self)
    #expect(
        definitions.map(\.name) == [
            "traces", "max-stalls", "max-hangs", "max-hitch-ratio", "max-hang-rate", "max", "baseline",
            "max-regression", "junit",
            "what-if", "include-expected", "rules",
        ])
    #expect(definitions[0].kind == .positional(optional: false, repeating: true, capturesRest: false))
    #expect(definitions[5].kind == .option(required: false, repeating: true))
    let record = CommandParser.definitions(of: RecordCommand.self)
    #expect(record.map(\.name) == ["output", "budget", "mode", "no-preload", "no-children", "command"])
    #expect(record[0].short == "o")
    #expect(record[0].kind == .option(required: true, repeating: false))
    #expect(record[2].defaultDescription == "stalls")
    #expect(record[3].kind == .flag && record[4].kind == .flag)
    #expect(record[5].kind == .positional(optional: false, repeating: true, capturesRest: true))
}

@Test func valuesArriveTyped() throws {
    let gate = try parse(
        ["a.swtrace", "--max", "io=1", "--max-stalls", "3", "b.swtrace", "--max", "database=0"], as: GateCommand.self)
    #expect(gate.traces == ["a.swtrace", "b.swtrace"])
    #expect(gate.limits == [.maxStalls(3), .maxCategory(.io, 1), .maxCategory(.database, 0)])
    #expect(gate.baseline == nil)
    let record = try parse(["-o", "t", "--budget", "8.3", "--mode", "full", "--", "app", "-x"], as: RecordCommand.self)
    #expect(record.output == "t")
    #expect(record.budget == .microseconds(8_300))
    #expect(record.mode == .full)
    #expect(record.command == ["app", "-x"])
    let defaults = try parse(["-o", "t", "app"], as: RecordCommand.self)
    #expect(defaults.budget == nil)
    #expect(defaults.mode == .stalls)
    let export = try parse(["t", "--format", "speedscope", "-o", "-"], as: ExportCommand.self)
    #expect(export.format == .speedscope)
    #expect(export.output == .standardOutput)
    #expect(try parse(["t", "--stall", "7"], as: ShowCommand.self).stall?.description == "7")
    let qualified = try parse(["t", "--stall", "4242:7"], as: ShowCommand.self).stall
    #expect(qualified?.pid == 4242 && qualified?.id == 7)
    #expect(StallReference(argument: "4242:") == nil && StallReference(argument: "1:2:3") == nil)
    #expect(try parse(["-o", "t", "--no-children", "app"], as: RecordCommand.self).noChildren)
    #expect(try parse(["a", "b"], as: DiffCommand.self).threshold == 10)
}

@Test func badValuesNameTheOptionAsTyped() {
    let mode = CLIRun(["record", "-o", "t", "--mode", "fast", "--", "true"])
    #expect(mode.exitCode == 2)
    #expect(mode.error.hasPrefix("Error: The value 'fast' is invalid for '--mode': expected stalls or full\n"))
    let budget = CLIRun(["record", "--output=t", "--budget", "0", "--", "true"])
    #expect(budget.exitCode == 2)
    #expect(budget.error.hasPrefix("Error: The value '0' is invalid for '--budget': expected a number above 0\n"))
    let top = CLIRun(["report", "t", "--top", "-3"])
    #expect(
        top.error.hasPrefix("Error: The value '-3' is invalid for '--top': expected a whole number of at least 0\n"))
}

@Test func validateRunsBeforeRun() {
    // No trace is read: the missing limit is found first.
    let run = CLIRun(["gate", "/no/such/trace"])
    #expect(run.exitCode == 2)
    #expect(run.error.hasPrefix("Error: Give at least one limit"))
}

@Test func eachParseGetsItsOwnStorage() throws {
    let first = try parse(["a", "--top", "1"], as: ReportCommand.self)
    let second = try parse(["b", "--json"], as: ReportCommand.self)
    #expect(first.traces == ["a"] && first.top == 1 && !first.json)
    #expect(second.traces == ["b"] && second.top == 10 && second.json)
}
