/// Turns a command type's property declarations into argument definitions, and a command
/// line into a command with its properties filled in.
///
/// The declarations are found with `Mirror` on a fresh `init()` instance, in declaration
/// order (which is help order): a stored property whose value is an `ArgumentDeclaration`
/// (`@Option`, `@Flag`, `@Argument`; the mirror shows the wrapper as `_name`) is an argument,
/// an `@OptionGroup` stands for its group's; other stored properties are ignored. Pure; use
/// it on any thread.
enum CommandParser {
    /// The outcome of parsing one command line.
    enum Outcome {
        /// The command, its properties filled in (not yet validated).
        case command(any ParsableCommand)
        /// `-h` or `--help` was given.
        case help
    }

    /// The arguments `type` declares, in declaration order.
    static func definitions(of type: any ParsableCommand.Type) -> [ArgumentDefinition] {
        declarations(of: type.init()).map(\.definition)
    }

    /// Parses `arguments` (without the command's name) into a new `type`.
    static func parse(_ arguments: [String], as type: any ParsableCommand.Type) throws(UsageError) -> Outcome {
        let command = type.init()
        let declarations = declarations(of: command)
        switch try ArgumentParser.parse(arguments, definitions: declarations.map(\.definition)) {
        case .help:
            return .help
        case .arguments(let parsed):
            for (declaration, definition) in declarations { try declaration.bind(parsed, as: definition) }
            return .command(command)
        }
    }

    /// The declarations of `command` (a command or an `@OptionGroup`'s group), a group's in
    /// its place.
    private static func declarations(
        of command: Any
    ) -> [(declaration: any ArgumentDeclaration, definition: ArgumentDefinition)] {
        Mirror(reflecting: command).children.flatMap { child in
            if let group = child.value as? any ArgumentGroupDeclaration { return declarations(of: group.arguments) }
            guard let label = child.label, let declaration = child.value as? any ArgumentDeclaration else {
                return []
            }
            let property = label.hasPrefix("_") ? String(label.dropFirst()) : label
            return [(declaration, declaration.definition(for: property))]
        }
    }
}
