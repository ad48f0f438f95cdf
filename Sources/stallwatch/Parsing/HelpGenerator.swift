/// Renders help and usage text in swift-argument-parser's layout: OVERVIEW, USAGE,
/// ARGUMENTS, OPTIONS, SUBCOMMANDS; labels in a 26-column left column, text wrapped at 80.
/// A command's arguments come from its declarations (`CommandParser.definitions(of:)`).
///
/// Pure; use it on any thread.
enum HelpGenerator {
    static let width = 80
    static let labelColumn = 26
    static let helpArgument = ArgumentDefinition.flag("help", short: "h", help: "Show help information.")
    static let versionArgument = ArgumentDefinition.flag("version", help: "Show the version.")

    /// The one-line (wrapped) usage: `stallwatch report <traces> ... [--json] [--top <n>]`.
    static func usage(for command: any ParsableCommand.Type, toolName: String) -> String {
        let arguments = CommandParser.definitions(of: command)
        var words = ["\(toolName) \(command.configuration.commandName)"]
        let positionals = arguments.filter(\.isPositional)
        let others = arguments.filter { !$0.isPositional }
        // Options first, then positionals, except a captured command line, which goes last after `--`.
        for argument in positionals {
            if case .positional(_, _, true) = argument.kind { continue }
            words.append(bracketed(argument))
        }
        for argument in others { words.append(bracketed(argument)) }
        for argument in positionals {
            if case .positional(_, _, true) = argument.kind { words.append("-- " + bracketed(argument)) }
        }
        // Wrapped as it is printed, after "USAGE: " (or "Usage: "), which the caller adds.
        return String(wrap(words, firstPrefix: "USAGE: ", indent: String(repeating: " ", count: 7)).dropFirst(7))
    }

    private static func bracketed(_ argument: ArgumentDefinition) -> String {
        switch argument.kind {
        case .positional(let optional, _, _):
            return optional ? "[\(argument.synopsis)]" : argument.synopsis
        case .option(let required, let repeating):
            let text = argument.synopsis + (repeating ? " ..." : "")
            return required ? text : "[\(text)]"
        case .flag:
            return "[\(argument.synopsis)]"
        }
    }

    /// The whole `--help` text of a command.
    static func help(for command: any ParsableCommand.Type, toolName: String) -> String {
        let configuration = command.configuration
        let arguments = CommandParser.definitions(of: command)
        var text = paragraph("OVERVIEW: \(configuration.abstract)") + "\n\n"
        if !configuration.discussion.isEmpty {
            text +=
                configuration.discussion.split(separator: "\n").map { paragraph(String($0)) }
                .joined(separator: "\n\n") + "\n\n"
        }
        text += "USAGE: " + usage(for: command, toolName: toolName) + "\n\n"
        let positionals = arguments.filter(\.isPositional)
        if !positionals.isEmpty {
            text += "ARGUMENTS:\n"
            for argument in positionals { text += row(argument.helpLabel, describe(argument)) }
            text += "\n"
        }
        text += "OPTIONS:\n"
        for argument in arguments where !argument.isPositional {
            text += row(argument.helpLabel, describe(argument))
        }
        text += row(helpArgument.helpLabel, helpArgument.help)
        return text
    }

    /// The root help: OVERVIEW, USAGE, OPTIONS (`--version`, `--help`), SUBCOMMANDS.
    static func rootHelp(abstract: String, toolName: String, subcommands: [CommandConfiguration]) -> String {
        var text = "OVERVIEW: \(abstract)\n\n"
        text += "USAGE: \(toolName) <subcommand>\n\n"
        text += "OPTIONS:\n"
        text += row(versionArgument.helpLabel, versionArgument.help)
        text += row(helpArgument.helpLabel, helpArgument.help)
        text += "\nSUBCOMMANDS:\n"
        for subcommand in subcommands { text += row(subcommand.commandName, subcommand.abstract) }
        text += row("help", "Show subcommand help information.")
        text += "\n  See '\(toolName) help <subcommand>' for detailed help.\n"
        return text
    }

    /// `text` wrapped at the width, continuation lines unindented.
    static func paragraph(_ text: String) -> String {
        wrap(text.split(separator: " ").map(String.init), firstPrefix: "", indent: "")
    }

    private static func describe(_ argument: ArgumentDefinition) -> String {
        argument.help + (argument.defaultDescription.map { " (default: \($0))" } ?? "")
    }

    /// `  label` padded to the column, then the text, wrapped under the column.
    static func row(_ label: String, _ help: String) -> String {
        let indent = String(repeating: " ", count: labelColumn)
        var prefix = "  " + label
        if prefix.count > labelColumn - 2 {
            prefix += "\n" + indent
        } else {
            prefix += String(repeating: " ", count: labelColumn - prefix.count)
        }
        return wrap(help.split(separator: " ").map(String.init), firstPrefix: prefix, indent: indent) + "\n"
    }

    /// Joins `words` with spaces into lines of at most `width` columns.
    static func wrap(_ words: [String], firstPrefix: String, indent: String) -> String {
        var lines: [String] = []
        var line = firstPrefix
        var lineHasWord = false
        var column = firstPrefix.split(separator: "\n", omittingEmptySubsequences: false).last?.count ?? 0
        for word in words {
            if lineHasWord && column + 1 + word.count > width {
                lines.append(line)
                line = indent + word
                column = indent.count + word.count
            } else {
                line += (lineHasWord ? " " : "") + word
                column += (lineHasWord ? 1 : 0) + word.count
            }
            lineHasWord = true
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }
}
