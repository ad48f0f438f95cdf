// The stalling work of the monitor tests' scenarios: named, never inlined, so stacks can show
// them (spinForStallTest, shared with the remedies' tests, is in StallwatchTestSupport).
import CSQLite
import CStallwatchShims
import Foundation
import StallwatchTestSupport

@testable import Stallwatch

/// Spins until the calling thread has run `milliseconds` of CPU time: however long a loaded
/// machine keeps it off a CPU, it runs that long past any deadline inside the spin (a spin timed
/// by the wall clock may get almost no CPU after its deadline, and so take no tick of its own).
@inline(never) func spinOnCPUForStallTest(milliseconds: UInt64) {
    let clock = ThreadCPUClock(tid: sw_gettid())
    let end = (clock.read() ?? 0) + milliseconds * 1_000_000
    var x: UInt64 = 1
    while (clock.read() ?? .max) < end {
        for i in 0..<1000 { x = x &* 6_364_136_223_846_793_005 &+ UInt64(i) }
    }
    blackHole(x)
}

@inline(never) func sleepForStallTest(milliseconds: UInt32) {
    usleep(milliseconds * 1000)
}

@inline(never) func readPipeForStallTest(_ fd: Int32) {
    var byte: UInt8 = 0
    _ = read(fd, &byte, 1)
}

@inline(never) func lockMutexForStallTest(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) {
    pthread_mutex_lock(mutex)
    pthread_mutex_unlock(mutex)
}

@inline(never) func waitConditionForStallTest(_ condition: NSCondition, until flag: Box<Bool>) {
    condition.lock()
    while !flag.value { condition.wait() }
    condition.unlock()
}

@inline(never) func fsyncForStallTest(path: String, megabytes: Int) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(fd >= 0)
    let chunk = [UInt8](repeating: 0xAB, count: 1 << 20)
    for _ in 0..<megabytes { _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
    fsync(fd)
    close(fd)
}

@inline(never) func slowQueryForStallTest(_ db: OpaquePointer, rows: Int) -> Int64 {
    var statement: OpaquePointer?
    let sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < \(rows)) SELECT sum(x) FROM c"
    precondition(sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK)
    defer { sqlite3_finalize(statement) }
    precondition(sqlite3_step(statement) == SQLITE_ROW)
    return sqlite3_column_int64(statement, 0)
}
