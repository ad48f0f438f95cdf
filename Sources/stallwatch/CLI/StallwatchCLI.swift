import StallwatchCore

/// The `stallwatch` command line: picks the subcommand, parses its arguments, prints help
/// and errors the way swift-argument-parser does, and returns the exit code.
///
/// Call `run(_:context:)` from one thread; it may take a while (it reads traces).
package enum StallwatchCLI {
    /// The tool's name in usage lines.
    static let toolName = "stallwatch"

    /// The version `stallwatch --version` prints (written down once, in `StallwatchVersion`).
    static let version = StallwatchVersion.current

    /// The OVERVIEW of `stallwatch --help`.
    static let abstract = "Find and explain main-thread stalls recorded by Stallwatch."

    /// The subcommands, in help order.
    static var commands: [any ParsableCommand.Type] {
        [
            RecordCommand.self, ReportCommand.self, ShowCommand.self, ExportCommand.self,
            DiffCommand.self, GateCommand.self,
        ]
    }

    /// Runs the command line `arguments` (without the program name) and returns the exit code.
    package static func run(_ arguments: [String], context: CommandContext) -> ExitCode {
        guard let first = arguments.first else {
            context.standardError.write(rootHelp)
            return .validationFailure
        }
        if first == "-h" || first == "--help" {
            context.standardOutput.write(rootHelp)
            return .success
        }
        if first == "--version" {
            context.print("\(toolName) \(version)")
            return .success
        }
        if first == "help" {
            guard arguments.count > 1 else {
                context.standardOutput.write(rootHelp)
                return .success
            }
            guard let command = command(named: arguments[1]), arguments.count == 2 else {
                return usageFailure(
                    UsageError("Unknown subcommand '\(arguments.dropFirst().joined(separator: " "))'"),
                    usage: "\(toolName) help <subcommand>", helpHint: "\(toolName) --help", context: context)
            }
            context.standardOutput.write(help(for: command))
            return .success
        }
        guard let command = command(named: first) else {
            return usageFailure(
                UsageError("Unknown subcommand '\(first)'"), usage: "\(toolName) <subcommand>",
                helpHint: "\(toolName) --help", context: context)
        }
        return run(command, Array(arguments.dropFirst()), context: context)
    }

    /// The whole `--help` text of `command`.
    static func help(for command: any ParsableCommand.Type) -> String {
        HelpGenerator.help(for: command, toolName: toolName)
    }

    /// The usage line of `command`.
    static func usage(for command: any ParsableCommand.Type) -> String {
        HelpGenerator.usage(for: command, toolName: toolName)
    }

    /// The text of `stallwatch --help`.
    static var rootHelp: String {
        HelpGenerator.rootHelp(abstract: abstract, toolName: toolName, subcommands: commands.map { $0.configuration })
    }

    static func command(named name: String) -> (any ParsableCommand.Type)? {
        commands.first { $0.configuration.commandName == name }
    }

    private static func run(
        _ type: any ParsableCommand.Type, _ arguments: [String], context: CommandContext
    ) -> ExitCode {
        let name = type.configuration.commandName
        func failure(_ error: UsageError) -> ExitCode {
            usageFailure(
                error, usage: usage(for: type), helpHint: "\(toolName) \(name) --help", context: context)
        }
        let command: any ParsableCommand
        do {
            switch try CommandParser.parse(arguments, as: type) {
            case .help:
                context.standardOutput.write(help(for: type))
                return .success
            case .command(let parsed):
                command = parsed
            }
            try command.validate()
        } catch {
            return failure(error)
        }
        do {
            return try command.run(in: context)
        } catch let error as UsageError {
            return failure(error)
        } catch let error as CommandFailure {
            for line in error.lines { context.printError("Error: \(line)") }
            return error.exitCode
        } catch {
            context.printError("Error: \(error)")
            return .validationFailure
        }
    }

    private static func usageFailure(
        _ error: UsageError, usage: String, helpHint: String, context: CommandContext
    ) -> ExitCode {
        context.printError("Error: \(error.message)")
        context.printError("Usage: \(usage)")
        context.printError("  See '\(helpHint)' for more information.")
        return .validationFailure
    }
}
