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
    // The raw-value defaults compare and hash the name, a String: that was most of the cost of
    // the category-keyed dictionaries a fleet report fills per stall.

    /// Whether two categories are the same case. Pure; any thread.
    public static func == (lhs: StallCategory, rhs: StallCategory) -> Bool { lhs.ordinal == rhs.ordinal }

    /// Hashes the case, not its name. Pure; any thread.
    public func hash(into hasher: inout Hasher) { hasher.combine(ordinal) }

    /// How many cases there are.
    package static let count = 5

    /// The case at position `ordinal` in `allCases`.
    @usableFromInline package init(ordinal: Int) {
        switch ordinal {
        case 0: self = .compute
        case 1: self = .io
        case 2: self = .lockWait
        case 3: self = .database
        default: self = .other
        }
    }

    /// The case's position in `allCases`.
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
