// Every help text, whole, as swift-argument-parser lays it out: OVERVIEW, USAGE, ARGUMENTS, OPTIONS, SUBCOMMANDS.
import StallwatchCLITestSupport
import Testing

@testable import stallwatch

private let rootHelpText = """
    OVERVIEW: Find and explain main-thread stalls recorded by Stallwatch.

    USAGE: stallwatch <subcommand>

    OPTIONS:
      --version               Show the version.
      -h, --help              Show help information.

    SUBCOMMANDS:
      record                  Run a command with stall recording turned on.
      report                  Summarize the stalls of one or more traces.
      show                    List a trace's stalls, or show one as a timeline.
      export                  Export traces for viewers, Spark/DuckDB, OpenTelemetry
                              or pprof.
      diff                    Compare the stall signatures of two traces or
                              directories.
      gate                    Check traces against stall limits (for CI).
      help                    Show subcommand help information.

      See 'stallwatch help <subcommand>' for detailed help.

    """

private let commandHelpTexts: [String: String] = [
    "record": """
    OVERVIEW: Run a command with stall recording turned on.

    Sets STALLWATCH_TRACE, STALLWATCH_BUDGET_MS and STALLWATCH_MODE in the command's
    environment; any app that runs MainLoop records to the trace. A program without
    MainLoop is watched through DispatchQueue.main (dispatchMain() or RunLoop.main)
    by the preload library libStallwatchPreload.so, found next to stallwatch or
    named by STALLWATCH_PRELOAD, which record adds to LD_PRELOAD. Where
    libStallwatchPreloadShim.so is beside that library, record preloads the shim
    instead, which loads the library only into the command itself, a Swift program,
    or a process that runs an event loop: a process that does none of these (a
    compiler, a shell) maps the small shim and nothing more. The processes the
    command starts inherit both, and are recorded too (--no-children: only the
    command's own process): the command's process writes the trace, every other
    process that records writes its own file, TRACE.d/NAME-PID.swtrace, so none
    overwrites another's; a trace and the TRACE.d directory left by an earlier run
    are removed first. report, show, gate, diff and export read TRACE as the whole
    recording: TRACE and the traces in TRACE.d, each process named. Exits with the
    command's status, 128+N if signal N killed it, 127 if it was not found, 126 if
    it could not run, 2 without starting it if the trace's directory is missing or
    not writable. SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1 and SIGUSR2 sent to
    record are passed on to the command (the terminal's Ctrl-C reaches it directly),
    so it never outlives record. The preload library never changes how the command
    dies: a program that is not a Swift program gets no Swift crash handler, and
    SWIFT_BACKTRACE is passed on unchanged.

    USAGE: stallwatch record -o <trace> [--budget <ms>] [--mode <mode>]
           [--no-preload] [--no-children] -- <command> ...

    ARGUMENTS:
      <command>               The command to run, with its arguments.

    OPTIONS:
      -o, --output <trace>    The trace file to write.
      --budget <ms>           The frame budget in milliseconds. (default: 16.667)
      --mode <mode>           stalls (stalls only) or full (every callout too).
                              (default: stalls)
      --no-preload            Do not preload the heartbeat library (only MainLoop
                              apps record).
      --no-children           Record only the command's own process, not the
                              processes it starts.
      -h, --help              Show help information.

    """,
    "report": """
    OVERVIEW: Summarize the stalls of one or more traces.

    Prints run time, loop utilisation, frames and FPS, the hitch ratio, stalls per
    tier and per category, loop-latency percentiles and the top stall signatures
    (dominant category + innermost app frames) with each one's representative stack
    and the share of the stall's time that stack stands for, and the call sites
    behind congested iterations. Lines fit the terminal (COLUMNS, else its width,
    else 100 columns). Several traces are read in parallel and added up. A trace
    that ends inside a record (a killed recorder) is read up to its last whole
    record, with a warning; a trace with a damaged region is reported as far as it
    could be read, then the command exits 2. A directory stands for every *.swtrace
    file under it. Several traces are summarised (processes, hosts, builds,
    unreadable files) and each signature says how many traces it affects and in
    which builds and on which hosts. --html writes one self-contained page
    (timeline, flame graph, every signature and stall) that opens in any browser
    without a network; '--html -' writes it to stdout instead of the report.

    USAGE: stallwatch report <traces> ... [--json] [--html <file>] [--top <n>]
           [--wide] [--verbose] [--rules <file>] [--by <key>] [--include-expected]
           [--list-traces]

    ARGUMENTS:
      <traces>                The trace files or directories to read ('-' for
                              standard input).

    OPTIONS:
      --json                  Print the report as JSON (schema: docs/cli.md).
      --html <file>           Write an HTML page too ('-' for stdout).
      --top <n>               How many stall signatures to list. (default: 10)
      --wide                  Do not fit lines to the terminal: show long names in
                              full.
      --verbose               Show frames by their full demangled symbols.
      --rules <file>          Classify with this JSON rules file's rules first
                              (default: $STALLWATCH_RULES).
      --by <key>              Group stalls by this app-state key (AppState).
      --include-expected      Count stalls the app marked as expected to be long
                              (expectLong) with the others.
      --list-traces           With several traces, also print one line per trace.
      -h, --help              Show help information.

    """,
    "show": """
    OVERVIEW: List a trace's stalls, or show one as a timeline.

    Without --stall, lists the trace's stalls (id, tier, duration, category, the
    share of the stall's time its representative stack stands for, site and
    signature). With --stall, shows that stall's callout, breakdown, every sample
    and the representative stack. A recording of a process tree (the trace and the
    traces in TRACE.d, as record writes them) lists each process's stalls under its
    name and pid; --stall PID:ID shows one (an id alone will do when one process has
    it). Lines fit the terminal (COLUMNS, else its width, else 100 columns).

    USAGE: stallwatch show <trace> [--stall <id>] [--json] [--wide] [--verbose]
           [--rules <file>]

    ARGUMENTS:
      <trace>                 The trace file to read ('-' for standard input).

    OPTIONS:
      --stall <id>            The stall's id (as listed without it; PID:ID in a
                              recording of several processes).
      --json                  Print the stall (or the list) as JSON (schema:
                              docs/cli.md).
      --wide                  Do not fit lines to the terminal: show long names in
                              full.
      --verbose               Show frames by their full demangled symbols.
      --rules <file>          Classify with this JSON rules file's rules first
                              (default: $STALLWATCH_RULES).
      -h, --help              Show help information.

    """,
    "export": """
    OVERVIEW: Export traces for viewers, Spark/DuckDB, OpenTelemetry or pprof.

    chrome: stalls, samples and (full mode) callouts on the main thread's track;
    open in https://ui.perfetto.dev or chrome://tracing. folded:
    'category;outer;...;inner MICROSECONDS' lines for flame graphs. speedscope: open
    in https://www.speedscope.app. jsonl, otlp-json and pprof take a directory
    (every *.swtrace under it) or a trace: jsonl is one JSON object per stall for
    Spark, DuckDB or ClickHouse (schema and queries: docs/fleet.md, tools/fleet/);
    otlp-json is an OTLP ExportTraceServiceRequest for an OpenTelemetry collector
    (POST /v1/traces); pprof is a gzip'ed profile.proto for go tool pprof, Pyroscope
    or Grafana.

    USAGE: stallwatch export <trace> --format <format> -o <file> [--samples]
           [--callouts] [--rules <file>]

    ARGUMENTS:
      <trace>                 The trace: a file, '-' for standard input, or a
                              directory (jsonl, otlp-json, pprof).

    OPTIONS:
      --format <format>       chrome, folded, speedscope, jsonl, otlp-json or pprof.
      -o, --output <file>     The file to write ('-' for stdout).
      --samples               jsonl: also write one line per sample.
      --callouts              otlp-json: also one span per callout of a full-mode
                              trace.
      --rules <file>          Classify with this JSON rules file's rules first
                              (default: $STALLWATCH_RULES).
      -h, --help              Show help information.

    """,
    "diff": """
    OVERVIEW: Compare the stall signatures of two traces or directories.

    A signature is worse when its total stall time or its stall count grew by more
    than the threshold (in percent of the base), better when one of them shrank by
    more and neither grew. Exits 0 whatever the result; use 'stallwatch gate' to
    fail a build.

    USAGE: stallwatch diff <base> <new> [--threshold <pct>] [--rules <file>]
           [--json]

    ARGUMENTS:
      <base>                  The baseline trace or directory.
      <new>                   The trace or directory to compare with it.

    OPTIONS:
      --threshold <pct>       The change that counts, in percent. (default: 10)
      --rules <file>          Classify with this JSON rules file's rules first
                              (default: $STALLWATCH_RULES).
      --json                  Print the diff as JSON (schema: docs/cli.md).
      -h, --help              Show help information.

    """,
    "gate": """
    OVERVIEW: Check traces against stall limits (for CI).

    Exits 0 when every limit passes, 1 when one fails, 2 for a usage error or an
    unreadable trace. Each limit is printed with its measured value and PASS or
    FAIL. Stalls are counted by their dominant category. The regression limit
    compares the hitch ratio (ms of overrun per second of run time) with the
    baseline's; a baseline of 0 allows no hitches. --what-if leaves a signature's
    stalls out of the traces (not the baseline's), to see which limits its fix would
    pass. The hang rate is seconds of hangs (stalls of tier hang or severe, at least
    250 ms by default) per hour of run time.

    USAGE: stallwatch gate <traces> ... [--max-stalls <n>] [--max-hangs <n>]
           [--max-hitch-ratio <ms-per-s>] [--max-hang-rate <s-per-hour>]
           [--max <category=n> ...] [--baseline <trace>] [--max-regression <pct>]
           [--junit <file>] [--what-if <signature> ...] [--include-expected]
           [--rules <file>]

    ARGUMENTS:
      <traces>                The trace files or directories to check (added up).

    OPTIONS:
      --max-stalls <n>        At most this many stalls.
      --max-hangs <n>         At most this many hangs (at least 250 ms by default).
      --max-hitch-ratio <ms-per-s>
                              At most this many ms of overrun per second.
      --max-hang-rate <s-per-hour>
                              At most this many seconds of hang per hour of run
                              time.
      --max <category=n>      At most n stalls of the category (compute, io,
                              lockWait, database, other).
      --baseline <trace>      A baseline trace or directory for --max-regression.
      --max-regression <pct>  How far the hitch ratio may exceed the baseline's, in
                              percent.
      --junit <file>          Also write the results as JUnit XML.
      --what-if <signature>   Check the limits as if this signature's stalls were
                              fixed (as report prints it).
      --include-expected      Count stalls the app marked as expected to be long
                              (expectLong) toward the limits.
      --rules <file>          Classify with this JSON rules file's rules first
                              (default: $STALLWATCH_RULES).
      -h, --help              Show help information.

    """,
]

@Test func rootHelp() {
    #expect(StallwatchCLI.rootHelp == rootHelpText)
    #expect(CLIRun(["--help"]).output == rootHelpText)
    #expect(CLIRun(["-h"]).output == rootHelpText)
    #expect(CLIRun(["help"]).output == rootHelpText)
    let bare = CLIRun([])
    #expect(bare.exitCode == 2)
    #expect(bare.error == rootHelpText)
}

@Test(arguments: ["record", "report", "show", "export", "diff", "gate"])
func commandHelp(command: String) throws {
    let expected = try #require(commandHelpTexts[command])
    for arguments in [[command, "--help"], [command, "-h"], ["help", command]] {
        let run = CLIRun(arguments)
        #expect(run.exitCode == 0)
        #expect(run.output == expected, "\(arguments)")
        #expect(run.error.isEmpty)
    }
}

@Test func versionIsPrintedOnStandardOutput() {
    let run = CLIRun(["--version"])
    #expect(run.exitCode == 0)
    #expect(run.output == "stallwatch \(StallwatchCLI.version)\n")
    #expect(run.error.isEmpty)
}

@Test func usageErrorsPrintMessageAndUsage() {
    let run = CLIRun(["export", "t.swtrace", "-o", "-"])
    #expect(run.exitCode == 2)
    #expect(
        run.error == """
            Error: Missing expected argument '--format <format>'
            Usage: stallwatch export <trace> --format <format> -o <file> [--samples]
                   [--callouts] [--rules <file>]
              See 'stallwatch export --help' for more information.

            """)
    #expect(run.output.isEmpty)
    let unknown = CLIRun(["frobnicate"])
    #expect(unknown.exitCode == 2)
    #expect(unknown.error.hasPrefix("Error: Unknown subcommand 'frobnicate'\n"))
    #expect(CLIRun(["help", "frobnicate"]).exitCode == 2)
}

@Test func everyLineFitsIn80Columns() {
    for text in [rootHelpText] + Array(commandHelpTexts.values) {
        for line in text.split(separator: "\n") { #expect(line.count <= 80, "\(line)") }
    }
}
