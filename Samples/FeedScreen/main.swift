// A seed-article scenario with its remedy: a feed screen that loads its rows from SQLite.
//   swift run FeedScreen            the query runs on the main thread: a database stall
//   swift run FeedScreen --fixed    the query runs on a background queue and only the result
//                                   is posted back to the main loop: no stall
// Record it with `STALLWATCH_TRACE=feed.swtrace swift run FeedScreen` (or `stallwatch record`)
// and gate it with `stallwatch gate feed.swtrace --max database=0`.
import CSQLite
import Dispatch
import Stallwatch

let fixed = CommandLine.arguments.contains("--fixed")
let loop = MainLoop.main

/// The screen's state; only the main loop's thread touches it.
final class FeedScreen: @unchecked Sendable {
    var rows = 0
}
let screen = FeedScreen()

@inline(never) func loadFeedRows(count: Int) -> Int {
    var db: OpaquePointer?
    guard sqlite3_open(":memory:", &db) == SQLITE_OK, let db else { return 0 }
    defer { sqlite3_close(db) }
    var statement: OpaquePointer?
    let sql =
        "WITH RECURSIVE feed(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM feed WHERE x < \(count)) SELECT count(*) FROM feed"
    guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else { return 0 }
    defer { sqlite3_finalize(statement) }
    return sqlite3_step(statement) == SQLITE_ROW ? Int(sqlite3_column_int64(statement, 0)) : 0
}

let frames = FrameClock(loop: loop) { _ in }  // the screen keeps rendering
frames.start()
loop.schedule(after: .milliseconds(100), label: "open feed") { _ in
    if fixed {
        // The remedy: heavy work off the main thread, only the UI update back on it.
        DispatchQueue.global(qos: .userInitiated).async {
            let count = loadFeedRows(count: 1_000_000)
            loop.post(label: "show feed") { screen.rows = count }
        }
    } else {
        screen.rows = loadFeedRows(count: 1_000_000)
    }
}
loop.schedule(after: .milliseconds(1_200), label: "close") { _ in loop.stop() }
loop.run()
frames.stop()
print("rows \(screen.rows), frames delivered \(frames.framesDelivered), dropped \(frames.framesDropped)")
