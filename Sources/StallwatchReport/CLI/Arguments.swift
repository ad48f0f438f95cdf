/// One positional argument, option or flag a command accepts: drives both parsing and help.
///
/// A plain value; use it on any thread.
public struct ArgumentDefinition: Sendable, Hashable {
    /// What sort of argument.
    public enum Kind: Sendable, Hashable {
        /// A positional value. `repeating` takes every remaining positional; `capturesRest`
        /// also takes everything after its first value, options included (a command line).
        case positional(optional: Bool, repeating: Bool, capturesRest: Bool)
        /// `--name <value>`; `repeating` keeps every occurrence, else the last wins.
        case option(required: Bool, repeating: Bool)
        /// `--name`, present or not.
        case flag
    }

    /// The kind.
    public var kind: Kind
    /// The long name without dashes (`top`), or the positional's name (`traces`).
    public var name: String
    /// The one-letter short name (`o` for `-o`), if any.
    public var short: Character?
    /// The value's name in help (`n` shows as `<n>`).
    public var valueName: String
    /// One sentence of help.
    public var help: String
    /// The default shown in help (`(default: 10)`), if any.
    public var defaultDescription: String?

    /// A positional argument.
    public static func positional(
        _ name: String, help: String, optional: Bool = false, repeating: Bool = false,
        capturesRest: Bool = false
    ) -> ArgumentDefinition {
        ArgumentDefinition(
            kind: .positional(optional: optional, repeating: repeating, capturesRest: capturesRest), name: name,
            short: nil, valueName: name, help: help, defaultDescription: nil)
    }

    /// An option that takes a value.
    public static func option(
        _ name: String, short: Character? = nil, valueName: String, help: String, required: Bool = false,
        repeating: Bool = false, defaultDescription: String? = nil
    ) -> ArgumentDefinition {
        ArgumentDefinition(
            kind: .option(required: required, repeating: repeating), name: name, short: short,
            valueName: valueName, help: help, defaultDescription: defaultDescription)
    }

    /// A flag.
    public static func flag(_ name: String, short: Character? = nil, help: String) -> ArgumentDefinition {
        ArgumentDefinition(kind: .flag, name: name, short: short, valueName: "", help: help, defaultDescription: nil)
    }

    var isPositional: Bool {
        if case .positional = kind { return true }
        return false
    }

    /// How the argument appears in usage and errors: `<traces> ...`, `--top <n>`, `-o <file>`.
    var synopsis: String {
        switch kind {
        case .positional(_, let repeating, _):
            return "<\(valueName)>" + (repeating ? " ..." : "")
        case .option:
            return (short.map { "-\($0)" } ?? "--\(name)") + " <\(valueName)>"
        case .flag:
            return short.map { "-\($0)" } ?? "--\(name)"
        }
    }

    /// The left column of help: `<traces>`, `-o, --output <file>`, `--json`.
    var helpLabel: String {
        switch kind {
        case .positional:
            return "<\(valueName)>"
        case .option:
            return (short.map { "-\($0), " } ?? "") + "--\(name) <\(valueName)>"
        case .flag:
            return (short.map { "-\($0), " } ?? "") + "--\(name)"
        }
    }
}

/// The values found on a command line, by argument name. Built by `ArgumentParser.parse`.
///
/// A plain value; use it on any thread.
public struct ParsedArguments: Sendable, Hashable {
    /// Every value given to each option or positional, in order.
    public var values: [String: [String]] = [:]
    /// The flags present.
    public var flags: Set<String> = []
    /// The spelling of each option as the user typed it (for messages).
    var spellings: [String: String] = [:]

    /// Creates an empty set of values.
    public init() {}

    /// Whether the flag was given.
    public func flag(_ name: String) -> Bool {
        flags.contains(name)
    }

    /// The value of an option or positional (the last one if given several times).
    public func value(_ name: String) -> String? {
        values[name]?.last
    }

    /// Every value of a repeating option or positional.
    public func all(_ name: String) -> [String] {
        values[name] ?? []
    }

    /// The value as an integer at least `minimum`; throws `UsageError` if it is not one.
    public func integer(_ name: String, minimum: Int = 0) throws(UsageError) -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), number >= minimum else {
            throw invalid(text, name, "a whole number of at least \(minimum)")
        }
        return number
    }

    /// The value as a finite number at least 0; throws `UsageError` if it is not one.
    public func number(_ name: String) throws(UsageError) -> Double? {
        guard let text = value(name) else { return nil }
        guard let number = Double(text), number.isFinite, number >= 0 else {
            throw invalid(text, name, "a number of at least 0")
        }
        return number
    }

    func invalid(_ text: String, _ name: String, _ expected: String) -> UsageError {
        UsageError("The value '\(text)' is invalid for '\(spellings[name] ?? "--\(name)")': expected \(expected)")
    }
}

/// Parses a command line against a command's `ArgumentDefinition`s.
///
/// Options may come before, between or after positionals; `--name value` and `--name=value`
/// are both accepted; `--` ends the options. `-h`/`--help` anywhere before `--` asks for help.
/// Pure; use it on any thread.
public enum ArgumentParser {
    /// The outcome of parsing.
    public enum Result: Sendable, Hashable {
        /// The values.
        case arguments(ParsedArguments)
        /// `-h` or `--help` was given.
        case help
    }

    /// Parses `arguments` (without the command name) against `definitions`.
    public static func parse(_ arguments: [String], definitions: [ArgumentDefinition]) throws(UsageError) -> Result {
        var parsed = ParsedArguments()
        var positionals: [String] = []
        var index = 0
        var optionsEnded = false
        let capturing = definitions.first {
            if case .positional(_, _, true) = $0.kind { return true }
            return false
        }
        let capturingIndex = definitions.filter(\.isPositional).firstIndex { $0 == capturing }
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                // Once the command line of `record` starts, the rest is its own.
                if let capturingIndex, positionals.count > capturingIndex {
                    positionals.append(contentsOf: arguments[index...])
                    break
                }
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument == "--help" || argument == "-h" { return .help }
            var name = argument
            var inlineValue: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            let definition = definitions.first {
                if $0.isPositional { return false }
                if name == "--\($0.name)" { return true }
                if let short = $0.short, name == "-\(short)" { return true }
                return false
            }
            guard let definition else { throw UsageError("Unknown option '\(name)'") }
            parsed.spellings[definition.name] = name
            switch definition.kind {
            case .flag:
                if inlineValue != nil { throw UsageError("The flag '\(name)' takes no value") }
                parsed.flags.insert(definition.name)
            case .option:
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else if index < arguments.count, !isOptionLike(arguments[index]) {
                    value = arguments[index]
                    index += 1
                } else {
                    throw UsageError("Missing value for '\(name) <\(definition.valueName)>'")
                }
                parsed.values[definition.name, default: []].append(value)
            case .positional:
                break
            }
        }
        try assign(positionals, to: definitions, in: &parsed)
        for definition in definitions {
            if case .option(true, _) = definition.kind, parsed.values[definition.name] == nil {
                throw UsageError("Missing expected argument '\(definition.synopsis)'")
            }
        }
        return .arguments(parsed)
    }

    private static func isOptionLike(_ text: String) -> Bool {
        guard text.hasPrefix("-"), text.count > 1 else { return false }
        // A negative number is a value, not an option.
        return Double(text) == nil
    }

    private static func assign(
        _ positionals: [String], to definitions: [ArgumentDefinition], in parsed: inout ParsedArguments
    ) throws(UsageError) {
        var remaining = positionals[...]
        for definition in definitions {
            guard case .positional(let optional, let repeating, let capturesRest) = definition.kind else { continue }
            if remaining.isEmpty {
                if optional { continue }
                throw UsageError("Missing expected argument '\(definition.synopsis)'")
            }
            if repeating || capturesRest {
                parsed.values[definition.name] = Array(remaining)
                remaining = []
            } else {
                parsed.values[definition.name] = [remaining.removeFirst()]
            }
        }
        if let extra = remaining.first { throw UsageError("Unexpected argument '\(extra)'") }
    }
}
