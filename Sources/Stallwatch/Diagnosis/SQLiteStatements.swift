import CStallwatchShims
import Glibc
import StallwatchCore

/// The opt-in hook that lets stall samples name the SQL statement the loop thread runs.
///
/// `register(_:)` installs a `sqlite3_trace_v2` callback (statement start and end) on one
/// connection: when a statement starts on a thread that runs a `MainLoop`, its text is copied
/// into that loop's statement slot (a few atomic stores, no lock, syscall or allocation), and
/// cleared when it ends; samples taken meanwhile carry a `WaitFact` of kind `database` with the
/// statement and the database file. Connections never registered cost nothing. SQLite is found
/// in the process (`dlsym`), so Stallwatch links no SQLite; registering replaces any trace
/// callback the app set on that connection. Any thread.
public enum SQLiteStatements {
    /// Why a connection could not be registered.
    public enum RegistrationError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The process has no `sqlite3_trace_v2` (SQLite is not loaded, or older than 3.14).
        case sqliteNotLoaded
        /// `sqlite3_trace_v2` returned this SQLite error code.
        case traceFailed(Int32)

        /// One line, e.g. "sqlite3_trace_v2 failed with code 21".
        public var description: String {
            switch self {
            case .sqliteNotLoaded: "the process has no sqlite3_trace_v2 (is SQLite 3.14+ loaded?)"
            case .traceFailed(let code): "sqlite3_trace_v2 failed with code \(code)"
            }
        }
    }

    private typealias TraceCallback =
        @convention(c) (UInt32, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Int32
    private typealias TraceV2 =
        @convention(c) (OpaquePointer?, UInt32, TraceCallback?, UnsafeMutableRawPointer?) -> Int32
    private typealias DBFilename = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> UnsafePointer<CChar>?

    private static let traceStatement: UInt32 = 0x01
    private static let traceProfile: UInt32 = 0x02

    private static let registry = Locked<(next: UInt64, files: [UInt64: String], tags: [UInt: UInt64])>(
        (1, [:], [:]))

    /// Starts naming `connection`'s statements in stall samples (a `sqlite3 *`; registering it
    /// again is harmless). Throws when SQLite's trace API is not in the process.
    public static func register(_ connection: OpaquePointer) throws(RegistrationError) {
        guard let trace = symbol("sqlite3_trace_v2", as: TraceV2.self) else { throw .sqliteNotLoaded }
        let file = symbol("sqlite3_db_filename", as: DBFilename.self).flatMap { name in
            name(connection, "main").map { String(cString: $0) }
        }
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
        let tag = registry.withLock { state -> UInt64 in
            if let known = state.tags[key] { return known }
            let tag = state.next
            state.next += 1
            state.tags[key] = tag
            state.files[tag] = file.map { $0.isEmpty ? ":memory:" : $0 } ?? "?"
            return tag
        }
        let code = trace(
            connection, traceStatement | traceProfile, callback, UnsafeMutableRawPointer(bitPattern: UInt(tag)))
        guard code == 0 else { throw .traceFailed(code) }
    }

    /// Stops naming `connection`'s statements (removes the trace callback). Call before
    /// closing the connection if it stays open longer than the hook should.
    public static func unregister(_ connection: OpaquePointer) {
        guard let trace = symbol("sqlite3_trace_v2", as: TraceV2.self) else { return }
        _ = trace(connection, 0, nil, nil)
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
        registry.withLock { state in
            if let tag = state.tags.removeValue(forKey: key) { state.files[tag] = nil }
        }
    }

    /// The database file of the connection registered under `tag`. Watchdog thread.
    static func file(forTag tag: UInt64) -> String? {
        registry.withLock { $0.files[tag] }
    }

    /// Runs on the thread that steps the statement: copies the SQL text into its loop's slot
    /// at start, clears it at the end. Threads without a loop return at once.
    private static let callback: TraceCallback = { type, context, _, text in
        guard let scopes = AnnotationScopes.current else { return 0 }
        if type == SQLiteStatements.traceStatement, let text {
            let sql = text.assumingMemoryBound(to: CChar.self)
            scopes.statement.write(tag: UInt64(UInt(bitPattern: context)), sql, length: strlen(sql))
        } else if type == SQLiteStatements.traceProfile {
            scopes.statement.clear()
        }
        return 0
    }

    private static func symbol<T>(_ name: String, as type: T.Type) -> T? {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(address, to: type)
    }
}

/// A loop thread's statement slot: the loop thread writes, the watchdog reads (see
/// `sw_text_slot.h`).
final class StatementSlot: @unchecked Sendable {
    private let slot: UnsafeMutablePointer<sw_text_slot>?

    init() { slot = sw_text_slot_create() }

    deinit { sw_text_slot_destroy(slot) }

    /// Loop thread.
    func write(tag: UInt64, _ text: UnsafePointer<CChar>, length: Int) {
        guard let slot else { return }
        sw_text_slot_write(slot, tag, text, length)
    }

    /// Loop thread.
    func clear() {
        guard let slot else { return }
        sw_text_slot_clear(slot)
    }

    /// Watchdog: the statement running now and its connection's tag, if any.
    func read() -> (tag: UInt64, text: String)? {
        guard let slot else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(SW_TEXT_SLOT_BYTES))
        var tag: UInt64 = 0
        let length = buffer.withUnsafeMutableBufferPointer { sw_text_slot_read(slot, &tag, $0.baseAddress) }
        guard tag != 0 else { return nil }
        let bytes = buffer[..<length].map { UInt8(bitPattern: $0) }
        return (tag, String(decoding: bytes, as: UTF8.self))
    }
}
