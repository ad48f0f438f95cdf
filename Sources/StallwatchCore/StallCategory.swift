/// What the main thread was doing during (part of) a stall.
///
/// The raw values are stable: they appear in trace files, rules files and JSON reports.
/// A plain value; use it on any thread.
public enum StallCategory: String, CaseIterable, Sendable, Hashable, Codable,
    CodingKeyRepresentable
{
    /// On CPU: the thread was running the app's (or a library's) code.
    case compute
    /// Waiting for a file, pipe, socket or the disk (`read`, `write`, `fsync`, state D…).
    case io
    /// Waiting for another thread: a mutex, condition variable, semaphore, futex…
    case lockWait
    /// Inside a database library (SQLite frames), whether computing or waiting.
    case database
    /// Anything else: sleeping, idle in a nested run loop, unknown.
    case other
}

extension StallCategory {
    // Categories key per-stall tallies (a fleet report fills several per stall): they compare
    // and hash by their position, not by their raw value, a String.

    /// Whether two categories are the same case. Pure; any thread.
    public static func == (lhs: StallCategory, rhs: StallCategory) -> Bool { lhs.ordinal == rhs.ordinal }

    /// Hashes the case, not its name. Pure; any thread.
    public func hash(into hasher: inout Hasher) { hasher.combine(ordinal) }

    /// The cases in declaration order, made once.
    @usableFromInline static let cases = allCases

    /// How many cases there are.
    package static let count = cases.count

    /// The case at position `ordinal` in `allCases`.
    @usableFromInline package init(ordinal: Int) { self = StallCategory.cases[ordinal] }

    /// The case's position in `allCases` (the switch is exhaustive, so a new case is a compile
    /// error here until it has its position: the next one).
    @usableFromInline package var ordinal: Int {
        switch self {
        case .compute: 0
        case .io: 1
        case .lockWait: 2
        case .database: 3
        case .other: 4
        }
    }
}
