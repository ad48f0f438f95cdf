/// The values found on a command line, as text, by argument name: what `ArgumentParser.parse`
/// returns and the `@Option`/`@Flag`/`@Argument` properties of a command read their typed
/// values from.
///
/// A plain value; use it on any thread.
struct ParsedArguments: Sendable, Hashable {
    /// Every value given to each option or positional, in order.
    var values: [String: [String]] = [:]
    /// The flags present.
    var flags: Set<String> = []
    /// The spelling of each option as the user typed it (for messages).
    var spellings: [String: String] = [:]

    /// Creates an empty set of values.
    init() {}

    /// Whether the flag was given.
    func flag(_ name: String) -> Bool {
        flags.contains(name)
    }

    /// The value of an option or positional (the last one if given several times).
    func value(_ name: String) -> String? {
        values[name]?.last
    }

    /// Every value of a repeating option or positional.
    func all(_ name: String) -> [String] {
        values[name] ?? []
    }

    /// The value of an option or positional converted to `Value`; `nil` when it was not
    /// given; a `UsageError` naming the option as typed when the text does not convert.
    func value<Value: ExpressibleByArgument>(_ name: String, as type: Value.Type) throws(UsageError) -> Value? {
        guard let text = value(name) else { return nil }
        return try convert(text, name, to: type)
    }

    /// Every value of a repeating option or positional converted to `Value`; `nil` when none
    /// was given.
    func all<Value: ExpressibleByArgument>(_ name: String, as type: Value.Type) throws(UsageError) -> [Value]? {
        guard let texts = values[name] else { return nil }
        var result: [Value] = []
        for text in texts { result.append(try convert(text, name, to: type)) }
        return result
    }

    /// The value as a count (a whole number of at least 0).
    func integer(_ name: String) throws(UsageError) -> Int? {
        try value(name, as: Int.self)
    }

    /// The spelling of option `name` as the user typed it (`-o`, `--output`), for messages.
    func spelling(of name: String) -> String {
        spellings[name] ?? "--\(name)"
    }

    private func convert<Value: ExpressibleByArgument>(
        _ text: String, _ name: String, to type: Value.Type
    ) throws(UsageError) -> Value {
        guard let value = Value(argument: text) else { throw invalid(text, name, Value.expectation) }
        return value
    }

    /// The usage error for `text`, given to `name`, that is not what `expected` describes.
    func invalid(_ text: String, _ name: String, _ expected: String) -> UsageError {
        UsageError.invalidValue(text, for: spelling(of: name), expected: expected)
    }
}

/// Parses a command line against a command's `ArgumentDefinition`s.
///
/// Options may come before, between or after positionals; `--name value` and `--name=value`
/// are both accepted; `--` ends the options. `-h`/`--help` anywhere before `--` asks for help.
/// Pure; use it on any thread.
enum ArgumentParser {
    /// The outcome of parsing.
    enum Result: Sendable, Hashable {
        /// The values.
        case arguments(ParsedArguments)
        /// `-h` or `--help` was given.
        case help
    }

    /// Parses `arguments` (without the command name) against `definitions`.
    static func parse(_ arguments: [String], definitions: [ArgumentDefinition]) throws(UsageError) -> Result {
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
                // Given twice, a single-valued option is refused, not resolved: which of
                // `--max-stalls 1 --max-stalls 100` was meant is not ours to guess.
                if case .option(_, false) = definition.kind, let first = parsed.values[definition.name]?.first {
                    throw UsageError("'\(name)' is given twice ('\(first)' and '\(value)'); give it once")
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
