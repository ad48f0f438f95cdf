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
