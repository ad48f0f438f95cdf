/// One positional argument, option or flag a command accepts, as the parser and the help
/// generator see it. A command's `@Option`/`@Flag`/`@Argument` properties each describe
/// themselves as one (`CommandParser.definitions(of:)`), so parsing and help cannot drift.
///
/// A plain value; use it on any thread.
struct ArgumentDefinition: Sendable, Hashable {
    /// What sort of argument.
    enum Kind: Sendable, Hashable {
        /// A positional value. `repeating` takes every remaining positional; `capturesRest`
        /// also takes everything after its first value, options included (a command line).
        case positional(optional: Bool, repeating: Bool, capturesRest: Bool)
        /// `--name <value>`; `repeating` keeps every occurrence, else a second is an error.
        case option(required: Bool, repeating: Bool)
        /// `--name`, present or not.
        case flag
    }

    /// The kind.
    var kind: Kind
    /// The long name without dashes (`top`), or the positional's name (`traces`).
    var name: String
    /// The one-letter short name (`o` for `-o`), if any.
    var short: Character?
    /// The value's name in help (`n` shows as `<n>`).
    var valueName: String
    /// One sentence of help.
    var help: String
    /// The default shown in help (`(default: 10)`), if any.
    var defaultDescription: String?

    /// A positional argument.
    static func positional(
        _ name: String, help: String, optional: Bool = false, repeating: Bool = false,
        capturesRest: Bool = false
    ) -> ArgumentDefinition {
        ArgumentDefinition(
            kind: .positional(optional: optional, repeating: repeating, capturesRest: capturesRest), name: name,
            short: nil, valueName: name, help: help, defaultDescription: nil)
    }

    /// An option that takes a value.
    static func option(
        _ name: String, short: Character? = nil, valueName: String, help: String, required: Bool = false,
        repeating: Bool = false, defaultDescription: String? = nil
    ) -> ArgumentDefinition {
        ArgumentDefinition(
            kind: .option(required: required, repeating: repeating), name: name, short: short,
            valueName: valueName, help: help, defaultDescription: defaultDescription)
    }

    /// A flag.
    static func flag(_ name: String, short: Character? = nil, help: String) -> ArgumentDefinition {
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
