import StallwatchCore
import StallwatchReport

/// `stallwatch show T [--stall N] [--json]`: one stall and its samples as a timeline, or the
/// list of the trace's stalls.
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "List a trace's stalls, or show one as a timeline.",
        discussion: """
            Without --stall, lists the trace's stalls (id, tier, duration, category, the share of \
            the stall's time its representative stack stands for, site and signature). With \
            --stall, shows that stall's callout, breakdown, every sample and the representative \
            stack. A recording of a process tree (the trace and the traces in TRACE.d, as record \
            writes them) lists each process's stalls under its name and pid; --stall PID:ID shows \
            one (an id alone will do when one process has it). Lines fit the terminal (COLUMNS, else its width, else 100 columns).
            """)

    /// The trace file.
    @Argument(help: "The trace file to read ('-' for standard input).")
    var trace: String

    /// The stall's id, if one is to be shown.
    @Option(valueName: "id", help: "The stall's id (as listed without it; PID:ID in a recording of several processes).")
    var stall: StallReference?

    /// Whether to print JSON.
    @Flag(help: "Print the stall (or the list) as JSON (schema: docs/cli.md).")
    var json = false

    /// `--wide` and `--verbose`: how the text is laid out.
    @OptionGroup var text: TextFlags

    /// `--rules`: the app's own classification rules.
    @OptionGroup var rules: RulesOption

    /// Reads the trace (every process's, for a recording of a process tree) and prints the
    /// stall or the list.
    func run(in context: CommandContext) throws -> ExitCode {
        let classifier = try rules.classifier(context: context)
        let all = try TraceInputs.load([trace], context: context).traces
        let options = text.options(in: context)
        guard let reference = self.stall else {
            let lists = all.map { loaded in
                loaded.trace.bareStalls.indices.map { AnalyzedStall(slot: $0, of: loaded, classifier: classifier) }
            }
            if all.count == 1 {
                context.standardOutput.write(
                    json
                        ? try JSONOutput.encode(lists[0].map(StallDetail.Summary.init))
                        : StallText.list(lists[0], trace: trace, options: options))
                return .success
            }
            if json {
                let processes = zip(all, lists).map { loaded, stalls in
                    ProcessStalls(
                        process: loaded.trace.header?.processName ?? "", pid: loaded.trace.header?.pid ?? 0,
                        path: loaded.path, stalls: stalls.map(StallDetail.Summary.init))
                }
                context.standardOutput.write(try JSONOutput.encode(processes))
                return .success
            }
            var text = "\(trace): a recording of \(all.count) processes; --stall PID:ID shows a stall of one\n"
            for (loaded, stalls) in zip(all, lists) {
                text += "\n" + StallText.list(stalls, trace: Self.name(loaded), options: options)
            }
            context.standardOutput.write(text)
            return .success
        }
        let matches = all.filter { reference.pid == nil || $0.trace.header?.pid == reference.pid }.compactMap {
            loaded in loaded.trace.bareStalls.firstIndex { $0.id == reference.id }.map { (loaded, $0) }
        }
        guard matches.count == 1, let (loaded, slot) = matches.first else {
            if matches.count > 1 {
                let choices = matches.map {
                    "--stall \($0.0.trace.header?.pid ?? 0):\(reference.id) (\(Self.name($0.0)))"
                }
                throw CommandFailure(
                    "\(trace): stall \(reference.id) is in \(matches.count) processes of the recording; give one: "
                        + choices.joined(separator: ", "))
            }
            if all.count > 1 {
                let pids = all.map { "\($0.trace.header?.pid ?? 0) (\($0.trace.header?.processName ?? $0.path))" }
                throw CommandFailure(
                    "\(trace): no stall \(reference) in the recording (its processes: \(pids.joined(separator: ", ")))")
            }
            let ids = all[0].trace.bareStalls.map { String($0.id) }
            let known = ids.isEmpty ? "it has no stalls" : "its stalls are " + ids.prefix(20).joined(separator: ", ")
            throw CommandFailure("\(trace): no stall with id \(reference.id) (\(known)\(ids.count > 20 ? ", …" : ""))")
        }
        let analyzed = AnalyzedStall(slot: slot, of: loaded, classifier: classifier)
        context.standardOutput.write(
            json ? try JSONOutput.encode(StallDetail(analyzed)) : StallText.render(analyzed, options: options))
        return .success
    }

    /// A process of a recording, as the list heads it: `NAME (pid PID, PATH)`.
    private static func name(_ loaded: LoadedTrace) -> String {
        guard let header = loaded.trace.header else { return loaded.path }
        return "\(header.processName) (pid \(header.pid), \(loaded.path))"
    }

    /// `show --json` without `--stall` on a recording of several processes: each one's list.
    private struct ProcessStalls: Encodable {
        var process: String
        var pid: UInt32
        var path: String
        var stalls: [StallDetail.Summary]
    }
}

/// `--stall ID`, or `--stall PID:ID` for the stall of one process of a recording of several.
struct StallReference: ExpressibleByArgument, CustomStringConvertible, Sendable {
    var pid: UInt32?
    var id: UInt64

    init?(argument: String) {
        let parts = argument.split(separator: ":", omittingEmptySubsequences: false)
        switch parts.count {
        case 1:
            guard let id = UInt64(parts[0]) else { return nil }
            (pid, self.id) = (nil, id)
        case 2:
            guard let pid = UInt32(parts[0]), let id = UInt64(parts[1]) else { return nil }
            (self.pid, self.id) = (pid, id)
        default: return nil
        }
    }

    static var expectation: String { "a whole number from 0 to \(UInt64.max) (a stall id), or PID:ID" }
    var description: String { pid.map { "\($0):\(id)" } ?? String(id) }
}
