// A classic main-thread stall and its remedy: a feed screen that loads its rows from SQLite.
//   swift run FeedScreen            the query runs on the main thread: a database stall
//   swift run FeedScreen --fixed    the query runs off the loop (`loop.offload`) and only the
//                                   result comes back to the main loop: no stall
// Record it with `STALLWATCH_TRACE=feed.swtrace swift run FeedScreen` (or `stallwatch record`)
// and gate it with `stallwatch gate feed.swtrace --max database=0`. Runs 1.2 s (`--seconds S`).
import CSQLite
import SampleSupport
import Stallwatch
import StallwatchRemedies

/// The screen's state: main-actor state, as an app's is.
@MainActor final class FeedScreen {
    var rows = 0
}
let screen = FeedScreen()

enum Feed {
    /// The rows the feed's query counts: long enough to be a hang (≥ 250 ms) on the main thread
    /// of a fast, quiet machine too (1,000,000 rows took 195–394 ms here, which is not).
    static let rows = 2_500_000
}

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

let run = SampleRun(name: "FeedScreen", defaultSeconds: 1.2)
run.onFrame = { _ in min(screen.rows, 12) }  // the visible rows, once the feed is loaded
run.onFinish = { run.note("feed", "\(screen.rows) rows loaded") }
run.run { run in  // the frame clock keeps the screen rendering meanwhile
    run.loop.schedule(after: .milliseconds(100), label: "open feed") { _ in
        if run.options.fixed {
            // The remedy: heavy work off the main thread, only the UI update back on it.
            run.loop.mainActor.offload(label: "show feed") {
                loadFeedRows(count: Feed.rows)
            } completion: { result in
                screen.rows = (try? result.get()) ?? 0
            }
        } else {
            screen.rows = loadFeedRows(count: Feed.rows)
        }
    }
}
let frames = run.frameClock
print("rows \(screen.rows), frames delivered \(frames?.framesDelivered ?? 0), dropped \(frames?.framesDropped ?? 0)")
