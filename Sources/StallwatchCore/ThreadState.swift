/// A thread's scheduler state: field 3 of `/proc/<pid>/task/<tid>/stat`.
///
/// Raw values are stable (trace files store them). A plain value; use it on any thread.
public enum ThreadState: UInt8, CaseIterable, Sendable, Hashable, Codable {
    /// `R`: running or runnable (on CPU, or waiting for one).
    case running
    /// `S`: interruptible sleep (waiting in a syscall: read, futex, poll, nanosleep…).
    case sleeping
    /// `D`: uninterruptible sleep, usually disk I/O (`fsync`, page-in). Signals wait.
    case diskSleep
    /// `T` or `t`: stopped by a signal or a tracer.
    case stopped
    /// `Z` (or `X`): exited, not yet reaped.
    case zombie
    /// `I`: idle kernel thread.
    case idle
    /// Not read, unreadable, or a letter this type does not know.
    case unknown

    /// Maps the state letter from `/proc/.../stat` (`R`, `S`, `D`, `T`, `t`, `Z`, `X`, `I`);
    /// any other character gives `.unknown`.
    public init(procCode: Character) {
        switch procCode {
        case "R": self = .running
        case "S": self = .sleeping
        case "D": self = .diskSleep
        case "T", "t": self = .stopped
        case "Z", "X": self = .zombie
        case "I": self = .idle
        default: self = .unknown
        }
    }

    /// The `/proc` letter for this state (`"R"`, `"S"`, `"D"`, `"T"`, `"Z"`, `"I"`, `"?"`).
    public var procCode: Character {
        switch self {
        case .running: "R"
        case .sleeping: "S"
        case .diskSleep: "D"
        case .stopped: "T"
        case .zombie: "Z"
        case .idle: "I"
        case .unknown: "?"
        }
    }

    /// The spelling used in rules files and reports (`"running"`, `"diskSleep"`…).
    public var name: String {
        switch self {
        case .running: "running"
        case .sleeping: "sleeping"
        case .diskSleep: "diskSleep"
        case .stopped: "stopped"
        case .zombie: "zombie"
        case .idle: "idle"
        case .unknown: "unknown"
        }
    }
}
