// What the monitor tests share: a scenario run on a monitored loop (16 ms budget) with what the
// monitor saw and what the scenario measured itself, and the named stalling work stacks show.
import CSQLite
import CStallwatchShims
import Foundation
import StallwatchCore
import Testing

@testable import Stallwatch

/// What a monitored scenario produced: the ended stalls and the monitor's statistics.
struct MonitoredRun: Sendable {
    var began: [Stall]
    var ended: [Stall]
    var statistics: StallMonitor.Statistics
    /// What the scenario measured itself: the stalling callout's duration (ns), per callout.
    var measured: [UInt64]
    /// When each of those callouts' work ran (CLOCK_MONOTONIC).
    var windows: [ClosedRange<UInt64>]
    /// Where the scenario posted its stalling work.
    var postedAt: (file: String, line: UInt)?
}

/// Runs `scenario` on a fresh loop thread with a StallMonitor (16 ms budget) attached, runs
/// the loop until the scenario's work is done plus `settle`, and returns what the monitor saw.
func monitored(
    budget: Duration = .nanoseconds(16_666_667),
    settle: Duration = .milliseconds(50),
    configure: @escaping @Sendable (inout StallMonitor.Configuration) -> Void = { _ in },
    _ scenario: @escaping @Sendable (MainLoop, Measurements) -> Void
) async throws -> MonitoredRun {
    let collected = Locked<(began: [Stall], ended: [Stall])>(([], []))
    let measurements = Measurements()
    let statistics = try await onLoopThreadThrowing { loop -> StallMonitor.Statistics in
        var configuration = StallMonitor.Configuration()
        configuration.budget = budget
        configure(&configuration)
        let monitor = StallMonitor(loop: loop, configuration: configuration)
        monitor.onStallBegan = { stall in collected.withLock { $0.began.append(stall) } }
        monitor.onStallEnded = { stall in collected.withLock { $0.ended.append(stall) } }
        try monitor.start()
        scenario(loop, measurements)
        // Not stop(): a scenario's nested run could take the stop meant for this one.
        let done = Box(false)
        loop.post(label: "finish") {
            loop.schedule(after: settle) { _ in done.value = true }
        }
        let giveUp = MainLoop.monotonicNanos() + 60_000_000_000
        while !done.value && MainLoop.monotonicNanos() < giveUp { loop.runOnce(timeout: .milliseconds(100)) }
        monitor.stop()
        return monitor.statistics
    }
    let (began, ended) = collected.withLock { ($0.began, $0.ended) }
    return MonitoredRun(
        began: began, ended: ended, statistics: statistics, measured: measurements.values,
        windows: measurements.windows, postedAt: measurements.postedAt)
}

/// Durations a scenario measured around its own stalling work.
final class Measurements: @unchecked Sendable {
    private let lock = Locked<[ClosedRange<UInt64>]>([])
    /// How long each timed piece of work took, in the order they ran.
    var values: [UInt64] { lock.withLock { $0.map { $0.upperBound - $0.lowerBound } } }
    /// When each ran (CLOCK_MONOTONIC): a stall of it must span its window.
    var windows: [ClosedRange<UInt64>] { lock.withLock { $0 } }

    private let site = Locked<(file: String, line: UInt)?>(nil)
    /// Where the stalling work was posted from.
    var postedAt: (file: String, line: UInt)? { site.withLock { $0 } }

    /// Posts `work` to `loop`, timed, remembering the posting site (which the stall must name).
    func post(
        _ loop: MainLoop, file: StaticString = #fileID, line: UInt = #line, _ work: @escaping @Sendable () -> Void
    ) {
        site.withLock { $0 = ("\(file)", line) }
        loop.post(file: file, line: line) { self.time(work) }
    }

    /// Runs `work` and records how long it took.
    func time(_ work: () -> Void) {
        let start = MainLoop.monotonicNanos()
        work()
        let end = MainLoop.monotonicNanos()
        lock.withLock { $0.append(start...end) }
    }
}

extension Stall {
    /// Every symbol in the first `depth` frames of every sample.
    func topSymbols(depth: Int = 12) -> [String] {
        samples.flatMap { $0.frames.prefix(depth).compactMap(\.symbol) }
    }

    var durationNanos: UInt64 { end.map { $0 - start } ?? 0 }

    /// Whether this stall spans `window` (work a test timed inside the callout), but for the
    /// TSC's conversion to CLOCK_MONOTONIC (0.1 ms of slack).
    func spans(_ window: ClosedRange<UInt64>) -> Bool {
        start <= window.lowerBound + 100_000 && (end ?? 0) + 100_000 >= window.upperBound
    }
}

// The stalling work of the scenarios: named, never inlined, so stacks can show them.

@inline(never) func spinForStallTest(milliseconds: UInt64) {
    let end = MainLoop.monotonicNanos() + milliseconds * 1_000_000
    var x: UInt64 = 1
    while MainLoop.monotonicNanos() < end {
        for i in 0..<1000 { x = x &* 6_364_136_223_846_793_005 &+ UInt64(i) }
    }
    blackHole(x)
}

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

@inline(never) func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
