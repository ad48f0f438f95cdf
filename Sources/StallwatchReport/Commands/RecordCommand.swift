#if canImport(Glibc)
    import Glibc
#endif

/// `stallwatch record -o T [--budget MS] [--mode stalls|full] -- CMD ARGS…`: runs a command
/// with recording turned on through its environment and forwards its exit status.
public struct RecordCommand: Command {
    /// The name, abstract and arguments.
    public static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Run a command with stall recording turned on.",
        discussion: """
            Sets STALLWATCH_TRACE, STALLWATCH_BUDGET_MS and STALLWATCH_MODE in the command's \
            environment; any app that runs MainLoop records to the trace. Exits with the command's \
            status, 128+N if signal N killed it, 127 if it was not found, 126 if it could not run.
            """,
        arguments: [
            .option("output", short: "o", valueName: "trace", help: "The trace file to write.", required: true),
            .option("budget", valueName: "ms", help: "The frame budget in milliseconds.", defaultDescription: "16.667"),
            .option(
                "mode", valueName: "mode", help: "stalls (stalls only) or full (every callout too).",
                defaultDescription: "stalls"),
            .positional(
                "command", help: "The command to run, with its arguments.", repeating: true, capturesRest: true),
        ])

    /// The trace path.
    public var output: String
    /// The budget, if given.
    public var budget: Double?
    /// `stalls` or `full`.
    public var mode: String
    /// The command line.
    public var command: [String]

    /// Builds the command from parsed arguments.
    public init(parsing arguments: ParsedArguments) throws(UsageError) {
        output = arguments.value("output") ?? ""
        budget = try arguments.number("budget")
        mode = arguments.value("mode") ?? "stalls"
        command = arguments.all("command")
        guard mode == "stalls" || mode == "full" else { throw arguments.invalid(mode, "mode", "stalls or full") }
        if let budget, budget <= 0 { throw arguments.invalid(String(budget), "budget", "a number above 0") }
    }

    /// Runs the command and waits for it.
    public func run(in context: CommandContext) throws -> ExitCode {
        var environment = context.environment
        environment["STALLWATCH_TRACE"] = output
        environment["STALLWATCH_MODE"] = mode
        if let budget { environment["STALLWATCH_BUDGET_MS"] = plainNumber(budget) }
        let status = try ChildProcess.run(command, environment: environment)
        if access(output, F_OK) != 0 {
            context.printError(
                "warning: \(command[0]) wrote no trace to \(output) (does it run MainLoop with Stallwatch linked in?)")
        }
        return status
    }
}

/// Spawns a command and waits for it, ignoring SIGINT and SIGQUIT meanwhile (as `time` and
/// shells do) so a Ctrl-C reaches the child and its death is reported, not ours.
enum ChildProcess {
    static func run(_ command: [String], environment: [String: String]) throws(CommandFailure) -> ExitCode {
        let arguments = command.map { strdup($0) } + [nil]
        let environmentStrings = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in arguments { free(pointer) }
            for pointer in environmentStrings { free(pointer) }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGQUIT)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))

        let previousInterrupt = signal(SIGINT, SIG_IGN)
        let previousQuit = signal(SIGQUIT, SIG_IGN)
        defer {
            signal(SIGINT, previousInterrupt)
            signal(SIGQUIT, previousQuit)
        }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, command[0], nil, &attributes, arguments, environmentStrings)
        if spawned != 0 {
            let code: Int32 = spawned == ENOENT ? 127 : 126
            throw CommandFailure(
                "cannot run '\(command[0])': \(String(cString: strerror(spawned)))", exitCode: ExitCode(code))
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else {
                throw CommandFailure("cannot wait for '\(command[0])': \(String(cString: strerror(errno)))")
            }
        }
        let signalNumber = status & 0x7F
        return signalNumber == 0 ? ExitCode((status >> 8) & 0xFF) : ExitCode(128 + signalNumber)
    }
}
