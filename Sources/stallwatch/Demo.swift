import CSQLite
import Dispatch
import Foundation
import Stallwatch

/// The built-in workload of `stallwatch demo`: an app-like main loop (a 60 Hz frame clock
/// doing light per-frame work, a few posts) that stalls on purpose once in each category —
/// compute, file I/O with fsync, a lock held by another thread, a slow SQLite query, and a
/// sleep — recorded in `full` mode to a trace in a temporary directory.
enum Demo {
    /// Runs the workload on `MainLoop.main` (call it on the main thread) and returns the
    /// path of the trace it recorded. Without `keep`, the trace is removed at exit.
    static func run(budgetMilliseconds: Double?, keep: Bool) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "stallwatch-demo-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("demo.trace").path
        var configuration = StallMonitor.Configuration()
        if let budgetMilliseconds { configuration.budget = .nanoseconds(Int64(budgetMilliseconds * 1_000_000)) }
        let recorder = try TraceRecorder(path: path, loop: .main, mode: .full, configuration: configuration)
        try recorder.start()
        let app = DemoApp(directory: directory.path)
        app.run()
        recorder.stop()
        if !keep {
            Demo.cleanup = directory.path
            atexit { if let path = Demo.cleanup { try? FileManager.default.removeItem(atPath: path) } }
        }
        return path
    }

    nonisolated(unsafe) static var cleanup: String?
}

/// The demo "app". Its functions have names a reader of the report recognises.
final class DemoApp {
    let loop = MainLoop.main
    let directory: String
    var frames: FrameClock?

    init(directory: String) {
        self.directory = directory
    }

    func run() {
        frames = FrameClock(loop: loop) { tick in
            // Light per-frame work: layout of a few hundred items (well inside the budget).
            blackHole(Layout.measure(items: 300 + Int(tick.frameIndex % 7)))
        }
        frames?.start()
        // One timer per stall, each on its own line: the report names where each was scheduled.
        loop.schedule(after: .milliseconds(300), label: "decode image") { _ in
            blackHole(ImageDecoder.decode(megapixels: 48))
        }
        loop.schedule(after: .milliseconds(700), label: "save settings") { [directory] _ in
            SettingsStore.save(in: directory, megabytes: 24)
        }
        loop.schedule(after: .milliseconds(1_100), label: "cache lookup") { _ in
            Cache.lookupWhileAnotherThreadHoldsTheLock(milliseconds: 120)
        }
        loop.schedule(after: .milliseconds(1_500), label: "load feed") { _ in
            blackHole(FeedDatabase.loadFeed(rows: 1_200_000))
        }
        loop.schedule(after: .milliseconds(1_900), label: "retry backoff") { _ in Network.backOff(milliseconds: 60) }
        for index in 0..<20 {
            loop.schedule(after: .milliseconds(100 * index + 50), label: "small update") { _ in
                blackHole(Layout.measure(items: 2_000))
            }
        }
        loop.schedule(after: .milliseconds(2_300), label: "demo end") { [loop] _ in loop.stop() }
        loop.run()
        frames?.stop()
    }
}

enum Layout {
    @inline(never) static func measure(items: Int) -> Int {
        var total = 0
        for item in 0..<items { total &+= (item &* 2_654_435_761) >> 7 }
        return total
    }
}

enum ImageDecoder {
    /// Compute on the main thread.
    @inline(never) static func decode(megapixels: Int) -> UInt64 {
        var hash: UInt64 = 14_695_981_039_346_656_037
        for pixel in 0..<(megapixels << 20) { hash = (hash ^ UInt64(pixel & 0xFF)) &* 1_099_511_628_211 }
        return hash
    }
}

enum SettingsStore {
    /// File I/O on the main thread: a write and an fsync.
    @inline(never) static func save(in directory: String, megabytes: Int) {
        let fd = open(directory + "/settings.bin", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return }
        let chunk = [UInt8](repeating: 0x42, count: 1 << 20)
        for _ in 0..<megabytes { _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
        fsync(fd)
        close(fd)
    }
}

enum Cache {
    static let lock = NSLock()

    /// A lock wait on the main thread: another thread holds the cache's lock.
    @inline(never) static func lookupWhileAnotherThreadHoldsTheLock(milliseconds: UInt32) {
        let held = DispatchSemaphore(value: 0)
        Thread {
            lock.lock()
            held.signal()
            usleep(milliseconds * 1_000)
            lock.unlock()
        }.start()
        held.wait()
        lock.lock()
        lock.unlock()
    }
}

enum FeedDatabase {
    /// A slow query on the main thread.
    @inline(never) static func loadFeed(rows: Int) -> Int64 {
        var db: OpaquePointer?
        guard sqlite3_open(":memory:", &db) == SQLITE_OK, let db else { return 0 }
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        let sql =
            "WITH RECURSIVE feed(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM feed WHERE x < \(rows)) SELECT sum(x) FROM feed"
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else { return 0 }
        defer { sqlite3_finalize(statement) }
        return sqlite3_step(statement) == SQLITE_ROW ? sqlite3_column_int64(statement, 0) : 0
    }
}

enum Network {
    /// A sleep on the main thread ("other").
    @inline(never) static func backOff(milliseconds: UInt32) {
        usleep(milliseconds * 1_000)
    }
}

@inline(never) func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
