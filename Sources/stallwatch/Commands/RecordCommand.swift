import StallwatchCore
import StallwatchReport

#if canImport(Glibc)
    import Glibc
#endif

/// `stallwatch record -o T [--budget MS] [--mode stalls|full] -- CMD ARGS…`: runs a command
/// with recording turned on through its environment and forwards its exit status.
struct RecordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Run a command with stall recording turned on.",
        discussion: """
            Sets STALLWATCH_TRACE, STALLWATCH_BUDGET_MS and STALLWATCH_MODE in the command's \
            environment; any app that runs MainLoop records to the trace. A program without \
            MainLoop is watched through DispatchQueue.main (dispatchMain() or RunLoop.main) by \
            the preload library libStallwatchPreload.so, found next to stallwatch or named by \
            STALLWATCH_PRELOAD, which record adds to LD_PRELOAD. Where \
            libStallwatchPreloadShim.so is beside that library, record preloads the shim instead, \
            which loads the library only into the command itself, a Swift program, or a process \
            that runs an event loop: a process that does none of these (a compiler, a shell) \
            maps the small shim and nothing more. The processes the command \
            starts inherit both, and are recorded too (--no-children: only the command's own \
            process): the command's process writes the trace, every other process that records \
            writes its own file, TRACE.d/NAME-PID.swtrace, so none overwrites another's; a trace \
            and the TRACE.d directory left by an earlier run are removed first. report, show, \
            gate, diff and export read TRACE as the whole recording: TRACE and the traces in \
            TRACE.d, each process named. Exits with the command's \
            status, 128+N if signal N killed it, 127 if it was not found, 126 if it could not run, \
            2 without starting it if the trace's directory is missing or not writable. SIGTERM, \
            SIGHUP, SIGINT, SIGQUIT, SIGUSR1 and SIGUSR2 sent to record are passed on to the \
            command (the terminal's Ctrl-C reaches it directly), so it never outlives record. \
            The preload library never changes how the command dies: a program that is not a Swift \
            program gets no Swift crash handler, and SWIFT_BACKTRACE is passed on unchanged.
            """)

    /// The trace file the command's recorder writes.
    @Option(name: .shortAndLong, valueName: "trace", help: "The trace file to write.")
    var output: String

    /// The frame budget; the recorder's default when not given.
    @Option(
        valueName: "ms", help: "The frame budget in milliseconds.",
        defaultDescription: TierThresholds.default.budget.defaultValueDescription)
    var budget: Duration?

    /// Stalls only, or every callout too.
    @Option(help: "stalls (stalls only) or full (every callout too).")
    var mode: TraceMode = .stalls

    /// Leave LD_PRELOAD alone: only MainLoop apps record.
    @Flag(help: "Do not preload the heartbeat library (only MainLoop apps record).")
    var noPreload = false

    /// Whether the processes the command starts record too.
    @Flag(help: "Record only the command's own process, not the processes it starts.")
    var noChildren = false

    /// The command line to run.
    @Argument(parsing: .captureForPassthrough, help: "The command to run, with its arguments.")
    var command: [String]

    /// A budget of 0 is no budget.
    func validate() throws(UsageError) {
        if let budget, budget <= .zero { throw $budget.invalid("a number above 0") }
    }

    /// Runs the command, waits for it, and warns when it wrote no trace.
    func run(in context: CommandContext) throws -> ExitCode {
        // Checked before the command starts: a trace that cannot be written is not worth a run.
        let slash = output.lastIndex(of: "/")
        let directory = slash.map { $0 == output.startIndex ? "/" : String(output[..<$0]) } ?? "."
        var info = stat()
        if stat(directory, &info) != 0 || info.st_mode & S_IFMT != S_IFDIR {
            throw CommandFailure("cannot write the trace \(output): there is no directory \(directory)")
        }
        if access(directory, W_OK | X_OK) != 0 {
            throw CommandFailure(
                "cannot write the trace \(output): directory \(directory) is not writable "
                    + "(\(String(cString: strerror(errno))))")
        }
        var environment = context.environment
        environment[StallwatchEnvironment.trace] = output
        // The root is the process whose parent is record, until it claims the recording
        // (STALLWATCH_ROOT_PID) for the processes it starts; an outer recording's claim is not
        // this one's.
        environment[StallwatchEnvironment.recordPID] = String(getpid())
        environment[StallwatchEnvironment.rootPID] = nil
        environment[StallwatchEnvironment.children] = noChildren ? "0" : nil
        environment[StallwatchEnvironment.mode] = mode.name
        if let budget { environment[StallwatchEnvironment.budgetMilliseconds] = budget.plainMilliseconds }
        let preload = noPreload ? nil : PreloadLibrary.locate(environment: context.environment)
        if let preload {
            let existing = environment["LD_PRELOAD"].map { " " + $0 } ?? ""
            environment["LD_PRELOAD"] = preload + existing
        }
        // What Stallwatch says in the program's processes goes to a file of record's, printed
        // below on record's stderr: the program's own output stays its own.
        let temporary = context.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((temporary + "/stallwatch-messages-XXXXXX").utf8CString)
        let messagesFD = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        let messages =
            messagesFD >= 0
            ? String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
        if messagesFD >= 0 { close(messagesFD) }
        defer { if let messages { unlink(messages) } }
        if let messages { environment[StallwatchEnvironment.messages] = messages }
        // This run's recording replaces the last one, whose processes' files would not all be
        // rewritten.
        Self.removeRecording(output)
        let status = try ChildProcess.run(command, environment: environment)
        if let messages, let said = try? RegularFile.read(messages), !said.isEmpty {
            context.standardError.write(String(decoding: said, as: UTF8.self))
        }
        if TraceLoader.expand([output]).allSatisfy({ access($0, F_OK) != 0 }) {
            let hint =
                preload == nil
                ? "(does it run MainLoop.main with Stallwatch linked in? \(PreloadLibrary.fileName) was not used)"
                : "(does it run MainLoop.main, dispatchMain() or RunLoop.main?)"
            context.printError("warning: \(command[0]) wrote no trace to \(output) \(hint)")
        }
        return status
    }

    /// Removes the recording at `trace`: the file, and the traces in its `.d` directory and
    /// the directory if that leaves it empty (anything else in it stays).
    static func removeRecording(_ trace: String) {
        unlink(trace)
        let directory = ProcessTreeFiles.childDirectory(of: trace)
        guard let handle = opendir(directory) else { return }
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasSuffix(ProcessTreeFiles.traceExtension) { unlink(directory + "/" + name) }
        }
        closedir(handle)
        rmdir(directory)
    }
}
