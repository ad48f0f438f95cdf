// The hand-written parser accepts what swift-argument-parser accepts and rejects the rest with a usage error.
import Testing

@testable import stallwatch

private let definitions: [ArgumentDefinition] = [
    .positional("traces", help: "Traces.", repeating: true),
    .flag("json", help: "JSON."),
    .option("top", valueName: "n", help: "Top."),
    .option("max", valueName: "category=n", help: "Max.", repeating: true),
    .option("output", short: "o", valueName: "file", help: "Output."),
]

private func parse(_ arguments: [String]) throws -> ParsedArguments {
    guard case .arguments(let parsed) = try ArgumentParser.parse(arguments, definitions: definitions) else {
        Issue.record("asked for help")
        return ParsedArguments()
    }
    return parsed
}

@Test func optionsMayComeAnywhereAndTakeEitherSpelling() throws {
    let parsed = try parse([
        "a.trace", "--top=3", "b.trace", "--json", "-o", "out", "--max", "io=1", "--max", "compute=2",
    ])
    #expect(parsed.all("traces") == ["a.trace", "b.trace"])
    #expect(try parsed.integer("top") == 3)
    #expect(parsed.flag("json"))
    #expect(parsed.value("output") == "out")
    #expect(parsed.all("max") == ["io=1", "compute=2"])
}

@Test func doubleDashEndsOptions() throws {
    let parsed = try parse(["--", "--json"])
    #expect(parsed.all("traces") == ["--json"])
    #expect(!parsed.flag("json"))
}

@Test func helpWinsAnywhere() throws {
    #expect(try ArgumentParser.parse(["a", "--top", "3", "-h"], definitions: definitions) == .help)
    #expect(try ArgumentParser.parse(["--help"], definitions: definitions) == .help)
}

@Test func mistakesAreUsageErrors() {
    #expect(throws: UsageError("Unknown option '--frob'")) { try parse(["a", "--frob"]) }
    #expect(throws: UsageError("Missing value for '--top <n>'")) { try parse(["a", "--top"]) }
    #expect(throws: UsageError("Missing expected argument '<traces> ...'")) { try parse(["--json"]) }
    #expect(throws: UsageError("The flag '--json' takes no value")) { try parse(["a", "--json=1"]) }
    #expect(throws: UsageError("The value 'x' is invalid for '--top': expected a whole number of at least 0")) {
        try parse(["a", "--top", "x"]).integer("top")
    }
}

@Test func aCapturedCommandLineKeepsItsOwnOptions() throws {
    let record: [ArgumentDefinition] = [
        .option("output", short: "o", valueName: "trace", help: "", required: true),
        .positional("command", help: "", repeating: true, capturesRest: true),
    ]
    guard
        case .arguments(let parsed) = try ArgumentParser.parse(
            ["-o", "t", "ls", "-la", "--", "-x"], definitions: record)
    else {
        Issue.record("asked for help")
        return
    }
    #expect(parsed.all("command") == ["ls", "-la", "--", "-x"])
    guard
        case .arguments(let dashed) = try ArgumentParser.parse(["-o", "t", "--", "ls", "--help"], definitions: record)
    else {
        Issue.record("asked for help")
        return
    }
    #expect(dashed.all("command") == ["ls", "--help"])
    #expect(throws: UsageError("Missing expected argument '-o <trace>'")) {
        _ = try ArgumentParser.parse(["--", "ls"], definitions: record)
    }
}
