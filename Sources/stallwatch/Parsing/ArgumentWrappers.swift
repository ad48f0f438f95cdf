import StallwatchReport

/// How an option is spelled on the command line. The long name comes from the property
/// (`maxStalls` is `--max-stalls`) unless `customLong` says otherwise; `shortAndLong` adds
/// the property's first letter (`output` is `-o, --output`).
struct NameSpecification: Sendable {
    fileprivate var long: String?
    fileprivate var short: Character?
    fileprivate var shortFromProperty = false

    /// `--property-name` only.
    static let long = NameSpecification()
    /// `-p, --property-name`.
    static let shortAndLong = NameSpecification(shortFromProperty: true)

    /// `--name` in place of the property's name.
    static func customLong(_ name: String) -> NameSpecification {
        NameSpecification(long: name)
    }

    func longName(for property: String) -> String {
        long ?? splittingCamelCase(property, separator: "-")
    }

    func shortName(for property: String) -> Character? {
        short ?? (shortFromProperty ? property.first : nil)
    }
}

/// How a positional `@Argument` holding an array takes the command line.
enum ArgumentArrayParsing: Sendable {
    /// Every remaining positional (options may come between them).
    case remaining
    /// From its first value on, everything, options included: a command line to pass on
    /// (`record … -- ls -la`).
    case captureForPassthrough
}

/// What the user typed for an option, for `validate()` messages: `$budget.invalid("a number
/// above 0")` says `The value '0' is invalid for '--budget': expected a number above 0`.
struct ArgumentOrigin: Sendable {
    /// The option as typed (`-o`, `--output`), or its long form when it was not given.
    var spelling: String
    /// The last value given, as typed.
    var text: String?

    /// The usage error for a value that parsed but is out of range.
    func invalid(_ expected: String) -> UsageError {
        UsageError.invalidValue(text ?? "", for: spelling, expected: expected)
    }
}

/// A command's `@Option`, `@Flag` or `@Argument` property, as `CommandParser` sees it through
/// `Mirror`: it describes itself for parsing and help, and takes its value from the parse.
protocol ArgumentDeclaration {
    /// The definition of the property named `property` (without the wrapper's underscore).
    func definition(for property: String) -> ArgumentDefinition
    /// Stores the typed value found for `definition` in `parsed` (or keeps the default).
    func bind(_ parsed: ParsedArguments, as definition: ArgumentDefinition) throws(UsageError)
}

/// Where a wrapper keeps its value. A class, because `CommandParser` can reach a property
/// only through the `Mirror` of a fresh `init()` instance, whose copies share the storage;
/// each `init()` makes new storage, so two parsed commands never share values.
final class ArgumentStorage<Value> {
    var value: Value?
    var origin = ArgumentOrigin(spelling: "")

    init(_ value: Value?) {
        self.value = value
    }

    var parsedValue: Value {
        guard let value else { preconditionFailure("a required argument was read before parsing") }
        return value
    }
}

/// An option that takes a value, `--name <value>`, declared as a typed property:
/// `@Option(valueName: "n", help: "How many to list.") var top = 10`. A property with a
/// default (or an optional one) may be left out; one without is required; an array
/// repeats (`--max a --max b`).
@propertyWrapper
struct Option<Value>: ArgumentDeclaration {
    private let names: NameSpecification
    private let valueName: String?
    private let help: String
    private let defaultDescription: String?
    private let required: Bool
    private let repeating: Bool
    private let read: (ParsedArguments, String) throws(UsageError) -> Value?
    private let storage: ArgumentStorage<Value>

    /// The parsed value (the default when the option was not given).
    var wrappedValue: Value { storage.parsedValue }
    /// What the user typed, for messages from `validate()`.
    var projectedValue: ArgumentOrigin { storage.origin }

    private init(
        names: NameSpecification, valueName: String?, help: String, defaultDescription: String?, required: Bool,
        repeating: Bool, initial: Value?, read: @escaping (ParsedArguments, String) throws(UsageError) -> Value?
    ) {
        self.names = names
        self.valueName = valueName
        self.help = help
        self.defaultDescription = defaultDescription
        self.required = required
        self.repeating = repeating
        self.read = read
        storage = ArgumentStorage(initial)
    }

    func definition(for property: String) -> ArgumentDefinition {
        let name = names.longName(for: property)
        return .option(
            name, short: names.shortName(for: property), valueName: valueName ?? name, help: help,
            required: required, repeating: repeating, defaultDescription: defaultDescription)
    }

    func bind(_ parsed: ParsedArguments, as definition: ArgumentDefinition) throws(UsageError) {
        storage.origin = ArgumentOrigin(
            spelling: parsed.spelling(of: definition.name), text: parsed.value(definition.name))
        if let value = try read(parsed, definition.name) { storage.value = value }
    }
}

extension Option where Value: ExpressibleByArgument {
    /// An option that may be left out: `@Option(help: "…") var mode: TraceMode = .stalls`.
    /// Help shows the default unless `defaultDescription` says otherwise.
    init(
        wrappedValue: Value, name: NameSpecification = .long, valueName: String? = nil, help: String,
        defaultDescription: String? = nil
    ) {
        self.init(
            names: name, valueName: valueName, help: help,
            defaultDescription: defaultDescription ?? wrappedValue.defaultValueDescription, required: false,
            repeating: false, initial: wrappedValue,
            read: { parsed, key throws(UsageError) in
                try parsed.value(key, as: Value.self)
            })
    }

    /// A required option: `@Option(help: "…") var format: Format`.
    init(name: NameSpecification = .long, valueName: String? = nil, help: String) {
        self.init(
            names: name, valueName: valueName, help: help, defaultDescription: nil, required: true, repeating: false,
            initial: nil, read: { parsed, key throws(UsageError) in try parsed.value(key, as: Value.self) })
    }
}

extension Option {
    /// An option that is `nil` when left out: `@Option(help: "…") var baseline: String?`.
    /// `defaultDescription` is what help says happens then, if anything.
    init<Wrapped: ExpressibleByArgument>(
        name: NameSpecification = .long, valueName: String? = nil, help: String, defaultDescription: String? = nil
    ) where Value == Wrapped? {
        self.init(
            names: name, valueName: valueName, help: help, defaultDescription: defaultDescription, required: false,
            repeating: false, initial: .some(nil),
            read: { parsed, key throws(UsageError) in try parsed.value(key, as: Wrapped.self).map { .some($0) } })
    }

    /// An option that may be given several times, each value kept in order:
    /// `@Option(help: "…") var limits: [CategoryLimit] = []`.
    init<Element: ExpressibleByArgument>(
        wrappedValue: [Element] = [], name: NameSpecification = .long, valueName: String? = nil, help: String
    ) where Value == [Element] {
        self.init(
            names: name, valueName: valueName, help: help, defaultDescription: nil, required: false, repeating: true,
            initial: wrappedValue, read: { parsed, key throws(UsageError) in try parsed.all(key, as: Element.self) })
    }
}

/// A flag, `--name`, declared as a `Bool` property: `@Flag(help: "Print JSON.") var json =
/// false`.
@propertyWrapper
struct Flag: ArgumentDeclaration {
    private let names: NameSpecification
    private let help: String
    private let storage: ArgumentStorage<Bool>

    /// Whether the flag was given.
    var wrappedValue: Bool { storage.parsedValue }

    /// A flag that is `false` unless given.
    init(wrappedValue: Bool = false, name: NameSpecification = .long, help: String) {
        names = name
        self.help = help
        storage = ArgumentStorage(wrappedValue)
    }

    func definition(for property: String) -> ArgumentDefinition {
        .flag(names.longName(for: property), short: names.shortName(for: property), help: help)
    }

    func bind(_ parsed: ParsedArguments, as definition: ArgumentDefinition) throws(UsageError) {
        if parsed.flag(definition.name) { storage.value = true }
    }
}

/// A positional argument declared as a typed property, named `<property>` in help:
/// `@Argument(help: "The trace file to read.") var trace: String`. An array takes every
/// remaining positional, at least one.
@propertyWrapper
struct Argument<Value>: ArgumentDeclaration {
    private let help: String
    private let repeating: Bool
    private let capturesRest: Bool
    private let read: (ParsedArguments, String) throws(UsageError) -> Value?
    private let storage = ArgumentStorage<Value>(nil)

    /// The parsed value.
    var wrappedValue: Value { storage.parsedValue }

    func definition(for property: String) -> ArgumentDefinition {
        .positional(property, help: help, repeating: repeating, capturesRest: capturesRest)
    }

    func bind(_ parsed: ParsedArguments, as definition: ArgumentDefinition) throws(UsageError) {
        storage.value = try read(parsed, definition.name)
    }
}

extension Argument where Value: ExpressibleByArgument {
    /// One required positional.
    init(help: String) {
        self.help = help
        repeating = false
        capturesRest = false
        read = { parsed, key throws(UsageError) in try parsed.value(key, as: Value.self) }
    }
}

extension Argument {
    /// The remaining positionals (at least one), or with `.captureForPassthrough` the rest of
    /// the command line.
    init<Element: ExpressibleByArgument>(parsing: ArgumentArrayParsing = .remaining, help: String)
    where Value == [Element] {
        self.help = help
        repeating = true
        capturesRest = parsing == .captureForPassthrough
        read = { parsed, key throws(UsageError) in try parsed.all(key, as: Element.self) }
    }
}

/// Arguments several commands share, declared once as the stored `@Option`, `@Flag` and
/// `@Argument` properties of a type and included in each command with `@OptionGroup`.
protocol ParsableArguments {
    /// The arguments with every property at its default, before parsing.
    init()
}

/// A command's property holding a `ParsableArguments` group, as swift-argument-parser's:
/// `@OptionGroup var rules: RulesOption`. The group's arguments stand where the property
/// does, in parsing and in help.
@propertyWrapper
struct OptionGroup<Group: ParsableArguments>: ArgumentGroupDeclaration {
    /// The group, its properties filled in by the parse.
    let wrappedValue = Group()

    var arguments: Any { wrappedValue }
}

/// An `@OptionGroup`, as `CommandParser` sees it through `Mirror`: the value whose properties
/// are the arguments.
protocol ArgumentGroupDeclaration {
    var arguments: Any { get }
}
