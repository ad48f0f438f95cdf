/// The environment variables Stallwatch reads, by name: the contract between `stallwatch record`,
/// which sets them for the program it runs, the runtime and the preload library, which read
/// them, and the CLI's own options. Each name is written once, here; the preload shim's C reads
/// the same names, and `StallwatchEnvironmentTests` fails if one of its names is not listed here.
package enum StallwatchEnvironment {
    /// Record to this trace file (`stallwatch record -o`).
    package static let trace = "STALLWATCH_TRACE"
    /// The trace's mode: `stalls` or `full`.
    package static let mode = "STALLWATCH_MODE"
    /// The frame budget in milliseconds.
    package static let budgetMilliseconds = "STALLWATCH_BUDGET_MS"
    /// The flight recorder's window in milliseconds (0: off).
    package static let flightMilliseconds = "STALLWATCH_FLIGHT_MS"
    /// How long an executor may go unserviced before its one warning, in milliseconds.
    package static let unservicedMilliseconds = "STALLWATCH_UNSERVICED_MS"
    /// Off (`0`, `off`, `false`, `no`): only the recorded command records, not its children.
    package static let children = "STALLWATCH_CHILDREN"
    /// The pid of the `stallwatch record` that started the recording.
    package static let recordPID = "STALLWATCH_RECORD_PID"
    /// The pid of the recording's root process, set by the root for the processes it starts.
    package static let rootPID = "STALLWATCH_ROOT_PID"
    /// Where the runtime's messages go (a file `record` reads back), instead of stderr.
    package static let messages = "STALLWATCH_MESSAGES"
    /// Off: the preload library watches no event loops and times no dispatched items.
    package static let loops = "STALLWATCH_LOOPS"
    /// Off: the preload library sends the Swift Concurrency pool no heartbeats.
    package static let pool = "STALLWATCH_POOL"
    /// Off: no perf_event stacks.
    package static let perf = "STALLWATCH_PERF"
    /// The preload library `record` uses instead of the one next to `stallwatch`.
    package static let preload = "STALLWATCH_PRELOAD"
    /// A rules file for the classifier (the CLI's `--rules` default).
    package static let rules = "STALLWATCH_RULES"
    /// The app's version, written into the trace's header.
    package static let appVersion = "STALLWATCH_APP_VERSION"

    /// Every name above.
    package static let all: Set<String> = [
        trace, mode, budgetMilliseconds, flightMilliseconds, unservicedMilliseconds, children, recordPID, rootPID,
        messages, loops, pool, perf, preload, rules, appVersion,
    ]

    /// Whether a switch variable's `value` turns its feature off: `0`, `off`, `false` or `no`
    /// (any case). The one reading of the on/off variables (`STALLWATCH_CHILDREN`,
    /// `STALLWATCH_LOOPS`, `STALLWATCH_POOL`, `STALLWATCH_PERF`).
    package static func isOff(_ value: String?) -> Bool {
        guard let value else { return false }
        return ["0", "off", "false", "no"].contains(value.lowercased())
    }
}
