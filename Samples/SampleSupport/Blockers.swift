// The four classic main-thread blockers, as plain work any sample (BlockingMain,
// Demo) runs on the loop or off it: heavy compute, file I/O, a database query and a slow holder
// of a lock. Each is sized (by a calibration or by time) so that on the main loop it overruns
// the frame budget by far more than 50 ms on any machine, fast disk or not.
import CSQLite
import Foundation
import StallwatchCore

/// How long each blocker works: ≥ 50 ms beyond the 16.7 ms budget even on a fast device.
public let blockerDuration = Duration.milliseconds(150)

/// A large photo buffer that is hashed in 64 KiB chunks (compute). Immutable: any thread.
public final class PhotoLibrary: Sendable {
    /// Bytes hashed per chunk.
    public static let chunkSize = 64 << 10
    /// The photo data (8 MiB, deterministic). Immutable: any thread.
    public let bytes: [UInt8]
    /// Chunks to hash for one checksum: calibrated so the whole job takes `blockerDuration`.
    public let chunkCount: Int

    /// 8 MiB of deterministic bytes; the chunk count is calibrated here, before the loop runs,
    /// from the fastest of 8 timings (a busy machine must not shrink the job).
    public init() {
        var bytes = [UInt8](repeating: 0, count: 8 << 20)
        bytes.withUnsafeMutableBytes { raw in
            var state: UInt64 = 0x1234_5678
            for index in 0..<(raw.count / 8) {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                raw.storeBytes(of: state, toByteOffset: index * 8, as: UInt64.self)
            }
        }
        self.bytes = bytes
        var fastest = UInt64.max
        for index in 0..<8 {
            let watch = Stopwatch()
            _ = Self.hash(bytes, chunk: index, seed: 0)
            fastest = min(fastest, max(1, watch.elapsedNanos))
        }
        chunkCount = max(8, Int(blockerDuration.nanoseconds / fastest) + 1)
    }

    /// Hashes chunk `index` (cycling through the buffer) into `seed`.
    public func hashChunk(_ index: Int, seed: UInt64) -> UInt64 { Self.hash(bytes, chunk: index, seed: seed) }

    private static func hash(_ bytes: [UInt8], chunk index: Int, seed: UInt64) -> UInt64 {
        let chunks = bytes.count / chunkSize
        let start = (index % chunks) * chunkSize
        return bytes.withUnsafeBytes {
            fnv1a(UnsafeRawBufferPointer(rebasing: $0[start..<start + chunkSize]), seed: seed)
        }
    }
}

/// A document on disk that is loaded and saved (file I/O). Any thread, one call at a time.
public struct DocumentStore: Sendable {
    /// The 16 MiB document that is loaded.
    public let documentPath: String
    /// Where its chunks are saved with fsync.
    public let savePath: String

    /// Writes a 16 MiB document into `directory` and drops it from the page cache, so loading
    /// it reads the disk.
    public init(directory: String) {
        documentPath = directory + "/document.bin"
        savePath = directory + "/saved.bin"
        let chunk = [UInt8](repeating: 0x5a, count: 1 << 20)
        let fd = open(documentPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        precondition(fd >= 0, "cannot create \(documentPath)")
        for _ in 0..<16 { _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
        fsync(fd)
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
        close(fd)
    }

    /// Loads the document with `Data(contentsOf:)`, then saves 256 KiB chunks with write +
    /// fsync until `minimum` has passed (an fsync takes 2 ms on one disk and 40 ms on another).
    public func loadAndSave(minimum: Duration) -> (bytesRead: Int, chunksSaved: Int) {
        let watch = Stopwatch()
        let document = (try? Data(contentsOf: URL(fileURLWithPath: documentPath))) ?? Data()
        let fd = open(savePath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { return (document.count, 0) }
        defer { close(fd) }
        var saved = 0
        let chunk = [UInt8](document.prefix(256 << 10))
        repeat {
            _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            fsync(fd)
            saved += 1
        } while !watch.hasElapsed(minimum)
        return (document.count, saved)
    }
}

/// An in-memory SQLite database of posts, searched with a full-table LIKE (database).
/// Used by one thread at a time: the main loop (blocking) or an offload (fixed).
public final class PostsDatabase: @unchecked Sendable {
    private var db: OpaquePointer?
    /// Rows in the posts table.
    public let rowCount: Int

    /// Creates and fills the table (before the loop runs).
    public init(rows: Int) {
        rowCount = rows
        guard sqlite3_open(":memory:", &db) == SQLITE_OK else { preconditionFailure("sqlite3_open failed") }
        exec("CREATE TABLE posts(id INTEGER PRIMARY KEY, author INTEGER, body TEXT, likes INTEGER)")
        exec(
            """
            WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < \(rows))
            INSERT INTO posts SELECT x, x % 97, printf('post %d by cat %d: %s', x, x % 97,
              substr('whiskers purr nap tuna laser box sunbeam', 1 + x % 23)), x % 1000 FROM n
            """)
    }

    deinit { sqlite3_close(db) }

    private func exec(_ sql: String) {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            preconditionFailure("sqlite: \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    /// Searches the posts with an unindexed LIKE, one word after another, until `minimum` has
    /// passed; returns the queries run and the rows they matched.
    public func search(minimum: Duration) -> (queries: Int, matches: Int) {
        let watch = Stopwatch()
        let words = ["tuna", "laser", "nap", "box", "sunbeam", "purr"]
        var queries = 0
        var matches = 0
        repeat {
            var statement: OpaquePointer?
            let sql = "SELECT count(*), sum(likes) FROM posts WHERE body LIKE '%\(words[queries % words.count])%'"
            guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else { break }
            if sqlite3_step(statement) == SQLITE_ROW { matches += Int(sqlite3_column_int64(statement, 0)) }
            sqlite3_finalize(statement)
            queries += 1
        } while !watch.hasElapsed(minimum)
        return (queries, matches)
    }
}

/// App settings, refreshed by a background thread; the refresh is slow (it parses a lot).
/// Pure: any thread.
public enum SettingsRefresh {
    /// Builds the next version's settings: compute for `minimum`, like parsing a large file.
    public static func build(version: Int, minimum: Duration) -> [String: String] {
        let watch = Stopwatch()
        var hash: UInt64 = 0
        var buffer = [UInt8](repeating: UInt8(truncatingIfNeeded: version), count: 4096)
        repeat {
            hash = fnv1a(buffer, seed: hash)
            buffer[Int(hash % 4096)] &+= 1
        } while !watch.hasElapsed(minimum)
        return ["version": "\(version)", "theme": hash % 2 == 0 ? "light" : "dark"]
    }
}

/// The blocking settings store: one lock guards the dictionary, and the refresher holds it
/// for the whole refresh, so a reader on the main loop waits behind it. Any thread.
public final class LockedSettings: @unchecked Sendable {
    private let lock = NSLock()
    private var values = ["version": "1", "theme": "light"]

    /// Settings at version 1.
    public init() {}

    /// Refreshes to `version` while holding the lock; `holding` runs once it is held.
    public func refresh(version: Int, holding: () -> Void) {
        lock.lock()
        holding()
        values = SettingsRefresh.build(version: version, minimum: blockerDuration)
        lock.unlock()
    }

    /// Reads a value (waits while a refresh holds the lock).
    public func value(_ key: String) -> String? {
        lock.lock()
        defer { lock.unlock() }
        return values[key]
    }

    /// Starts a refresh to `version` on another thread and reads `key` as soon as that thread
    /// holds the lock: the caller waits for the whole refresh (a lock wait). Returns the value
    /// read (the new version's) and how long the read waited.
    public func readWhileAnotherThreadRefreshes(
        version: Int, key: String
    ) -> (value: String?, waitedMilliseconds: Double) {
        let held = DispatchSemaphore(value: 0)
        Thread.detachNewThread { self.refresh(version: version) { held.signal() } }
        held.wait()
        let watch = Stopwatch()
        let value = value(key)
        return (value, watch.elapsedMilliseconds)
    }
}
