// Real stalls on a monitored loop — real locks, files, sockets and SQLite — are classified
// into the right category by the classifier; a confusion table is printed in the test log.
import CSQLite
import Dispatch
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Synchronization
import Testing

@testable import Stallwatch

/// One real scenario: what it does on the loop thread, and the category it must get.
struct Scenario: Sendable, CustomTestStringConvertible {
    var name: String
    var expected: StallCategory
    /// The category can only come from the frames of code that is running (not waiting in a
    /// syscall) when sampled. Under ThreadSanitizer such samples do not show that code: TSan
    /// runs the sampling handler later, at the thread's next intercepted call, so the
    /// scenario is left out there (`Scenarios.forThisBuild`).
    var needsTheRunningStack = false
    /// Runs before the loop (off the loop thread); returns the work to post.
    var prepare: @Sendable () -> @Sendable () -> Void
    var testDescription: String { name }
}

/// Collected verdicts, printed as a confusion table when the suite ends.
let confusion = Locked<[(name: String, expected: StallCategory, got: StallCategory?, share: Double)]>([])

func printConfusionTable() {
    let rows = confusion.withLock { $0 }
    guard !rows.isEmpty else { return }
    let categories = StallCategory.allCases
    var lines = ["confusion table (rows: expected, columns: classified):"]
    lines.append(
        "expected".padding(toLength: 10, withPad: " ", startingAt: 0)
            + categories.map { $0.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0) }.joined() + "none")
    for expected in categories {
        let mine = rows.filter { $0.expected == expected }
        guard !mine.isEmpty else { continue }
        var line = expected.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)
        for got in categories {
            line += "\(mine.filter { $0.got == got }.count)".padding(toLength: 10, withPad: " ", startingAt: 0)
        }
        line += "\(mine.filter { $0.got == nil }.count)"
        lines.append(line)
    }
    for row in rows { lines.append("  \(row.name): \(row.got?.rawValue ?? "no stall") (\(Int(row.share * 100))%)") }
    print(lines.joined(separator: "\n"))
}

enum Scenarios {
    static func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-\(name)-\(UUID())").path
    }

    /// The scenarios this build can check (all of them, except under ThreadSanitizer).
    static let forThisBuild = all.filter { !(Sanitizer.thread && $0.needsTheRunningStack) }

    static let all: [Scenario] = [
        Scenario(name: "compute: hash loop", expected: .compute) {
            { spinForStallTest(milliseconds: 80) }
        },
        Scenario(name: "io: read of an uncached file", expected: .io) {
            let path = temporaryPath("read")
            writeFile(path, megabytes: 192, sync: true)
            return {
                readUncached(path)
                unlink(path)
            }
        },
        Scenario(name: "io: write + fsync", expected: .io) {
            let path = temporaryPath("fsync")
            return {
                fsyncForStallTest(path: path, megabytes: 96)
                unlink(path)
            }
        },
        Scenario(name: "io: socketpair read, peer writes late", expected: .io) {
            var fds: [Int32] = [0, 0]
            precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            let (mine, peer) = (fds[0], fds[1])
            return {
                Thread {
                    usleep(80_000)
                    _ = write(peer, "x", 1)
                }.start()
                readPipeForStallTest(mine)
                close(mine)
                close(peer)
            }
        },
        Scenario(name: "lockWait: pthread mutex held elsewhere", expected: .lockWait) {
            nonisolated(unsafe) let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
            pthread_mutex_init(mutex, nil)
            holdElsewhere(
                milliseconds: Scenarios.heldBeforeTheLoop, lock: { pthread_mutex_lock(mutex) },
                unlock: { pthread_mutex_unlock(mutex) })
            return {
                lockMutexForStallTest(mutex)
                // The holder has unlocked it for good (that is what ended the wait).
                pthread_mutex_destroy(mutex)
                mutex.deallocate()
            }
        },
        Scenario(name: "lockWait: NSLock", expected: .lockWait) {
            let lock = NSLock()
            holdElsewhere(milliseconds: Scenarios.heldBeforeTheLoop, lock: { lock.lock() }, unlock: { lock.unlock() })
            return { lockNSLockForStallTest(lock) }
        },
        Scenario(name: "lockWait: Synchronization.Mutex", expected: .lockWait) {
            let mutex = SharedMutex()
            let held = DispatchSemaphore(value: 0)
            Thread {
                mutex.value.withLock { _ in
                    held.signal()
                    usleep(Scenarios.heldBeforeTheLoop * 1000)
                }
            }.start()
            held.wait()
            return { lockSwiftMutexForStallTest(mutex) }
        },
        Scenario(name: "lockWait: DispatchSemaphore.wait", expected: .lockWait) {
            let semaphore = DispatchSemaphore(value: 0)
            return {
                Thread {
                    usleep(80_000)
                    semaphore.signal()
                }.start()
                waitSemaphoreForStallTest(semaphore)
            }
        },
        Scenario(name: "lockWait: condition wait", expected: .lockWait) {
            let condition = NSCondition()
            let flag = Box(false)
            return {
                Thread {
                    usleep(80_000)
                    condition.lock()
                    flag.value = true
                    condition.signal()
                    condition.unlock()
                }.start()
                waitConditionForStallTest(condition, until: flag)
            }
        },
        Scenario(name: "database: slow SQLite query", expected: .database, needsTheRunningStack: true) {
            var db: OpaquePointer?
            precondition(sqlite3_open(":memory:", &db) == SQLITE_OK)
            nonisolated(unsafe) let connection = db!
            return {
                blackHole(slowQueryForStallTest(connection, rows: 1_500_000))
                sqlite3_close(connection)
            }
        },
        Scenario(name: "database: SQLite busy-wait on a locked database", expected: .database) {
            let path = temporaryPath("busy.sqlite")
            var holder: OpaquePointer?
            var waiter: OpaquePointer?
            precondition(sqlite3_open(path, &holder) == SQLITE_OK && sqlite3_open(path, &waiter) == SQLITE_OK)
            sqlite3_exec(holder, "CREATE TABLE t(x); BEGIN IMMEDIATE; INSERT INTO t VALUES (1);", nil, nil, nil)
            sqlite3_busy_timeout(waiter, 100)
            nonisolated(unsafe) let (h, w) = (holder!, waiter!)
            return {
                busyInsertForStallTest(w)
                sqlite3_exec(h, "COMMIT", nil, nil, nil)
                sqlite3_close(w)
                sqlite3_close(h)
                unlink(path)
            }
        },
        Scenario(name: "other: usleep", expected: .other) {
            { sleepForStallTest(milliseconds: 80) }
        },
        Scenario(name: "annotation wins: spin annotated as database", expected: .database) {
            { annotate("fake ORM", category: .database) { spinForStallTest(milliseconds: 80) } }
        },
    ]
}

@Suite(.serialized) struct ClassificationTests {
    @Test(arguments: Scenarios.forThisBuild)
    func realStallIsClassified(_ scenario: Scenario) async throws {
        let work = scenario.prepare()
        let run = try await monitored { loop, measure in measure.post(loop, work) }
        // The scenario's stall is the one that spans its work. Another callout the machine
        // stretched past the budget (the test's own bookkeeping, under a sanitizer's slowdown) is
        // a real stall too, but never one that spans the work.
        let ofTheWork = run.ended.filter { $0.spans(run.windows[0]) }
        let stall = ofTheWork.first
        let breakdown = stall.map { Classifier().breakdown(of: $0) }
        confusion.withLock {
            $0.append((scenario.name, scenario.expected, breakdown?.dominant, breakdown?.dominantShare ?? 0))
        }
        if confusion.withLock({ $0.count }) == Scenarios.forThisBuild.count { printConfusionTable() }
        #expect(ofTheWork.count == 1, "\(scenario.name): \(run.ended.map { ($0.callout, $0.durationNanos) })")
        #expect(breakdown?.dominant == scenario.expected, "\(scenario.name): \(String(describing: breakdown))")
    }

    @Test(
        .timingSensitive(
            "compares the sampled shares of a 150 ms spin and ≥ 80 ms of fsync with the time each took: on a "
                + "loaded 2-core machine the watchdog's samples land unevenly between the two phases"))
    func mixedStallShowsBothShares() async throws {
        let path = Scenarios.temporaryPath("mixed")
        defer { unlink(path) }
        // Absolute times of the phase boundaries. The compute phase is long (150 ms) so that
        // even a watchdog delayed by TSan or a loaded machine samples it several times.
        let phases = Locked<(middle: UInt64, end: UInt64)>((0, 0))
        let run = try await monitored { loop, measure in
            measure.post(loop) {
                spinForStallTest(milliseconds: 150)
                let middle = MainLoop.monotonicNanos()
                // I/O for at least 80 ms, however fast the disk.
                repeat {
                    fsyncForStallTest(path: path, megabytes: 2)
                } while MainLoop.monotonicNanos() - middle < 80_000_000
                phases.withLock { $0 = (middle, MainLoop.monotonicNanos()) }
            }
        }
        let stall = try #require(run.ended.first)
        let breakdown = Classifier().breakdown(of: stall)
        let (middle, end) = phases.withLock { $0 }
        // The breakdown covers the whole stall (the first sample also stands for the time
        // before it, `StallAccounting`), so compare with the phases as they ran.
        let computeNanos = middle - stall.start
        let ioNanos = end - middle
        let expectedCompute = Double(computeNanos) / Double(computeNanos + ioNanos)
        let compute = breakdown.share(of: .compute)
        let io = breakdown.share(of: .io)
        print(
            "mixed stall: compute \(computeNanos / 1_000_000) ms + io \(ioNanos / 1_000_000) ms;",
            "breakdown compute \(Int(compute * 100))% (expected ≈\(Int(expectedCompute * 100))%), io \(Int(io * 100))%")
        if ProcessInfo.processInfo.environment["STALLWATCH_DEBUG"] != nil {
            let classifier = Classifier()
            for sample in stall.samples {
                let verdict = classifier.classify(sample)
                print(
                    (sample.time - stall.start) / 1_000_000, sample.state, sample.syscallName ?? "-",
                    sample.captureTimedOut, verdict.category, verdict.reason,
                    sample.frames.prefix(2).map { $0.symbol ?? "?" })
            }
        }
        #expect(compute > 0.05 && io > 0.05, "both parts show")
        // Sanitized builds sample less evenly (CI under ASan once gave 0.21 off): a wider
        // tolerance there (docs/sanitizers.md lists it).
        let tolerance = Sanitizer.address || Sanitizer.thread ? 0.3 : 0.2
        #expect(abs(compute - expectedCompute) < tolerance, "compute share \(compute) vs \(expectedCompute)")
        #expect(compute + io > 0.9)
    }
}

// More stalling work, named for the stacks.

func writeFile(_ path: String, megabytes: Int, sync: Bool) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let chunk = [UInt8](repeating: 0x5A, count: 1 << 20)
    for _ in 0..<megabytes { _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
    if sync { fsync(fd) }
    close(fd)
}

@inline(never) func readUncached(_ path: String) {
    let fd = open(path, O_RDONLY)
    // Evict it from the page cache, so the read really goes to the disk.
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
    close(fd)
}

extension Scenarios {
    /// How long a lock taken in a scenario's `prepare` stays held: the hold starts before the
    /// monitored loop does, whose start-up (a thread, a loop, a monitor) took ~40 ms under ASan
    /// in CI, so 80 ms left one late-sampled 39 ms stall. 150 ms leaves a long one.
    static let heldBeforeTheLoop: UInt32 = 150
}

func holdElsewhere(milliseconds: UInt32, lock: @escaping @Sendable () -> Void, unlock: @escaping @Sendable () -> Void) {
    let held = DispatchSemaphore(value: 0)
    Thread {
        lock()
        held.signal()
        usleep(milliseconds * 1000)
        unlock()
    }.start()
    held.wait()
}

final class SharedMutex: Sendable {
    let value = Mutex(0)
}

@inline(never) func lockNSLockForStallTest(_ lock: NSLock) {
    lock.lock()
    lock.unlock()
}

@inline(never) func lockSwiftMutexForStallTest(_ mutex: SharedMutex) {
    mutex.value.withLock { $0 += 1 }
}

@inline(never) func waitSemaphoreForStallTest(_ semaphore: DispatchSemaphore) {
    semaphore.wait()
}

@inline(never) func busyInsertForStallTest(_ db: OpaquePointer) {
    // Busy handler sleeps (sqlite3_busy_timeout) until it gives up with SQLITE_BUSY.
    _ = sqlite3_exec(db, "INSERT INTO t VALUES (2)", nil, nil, nil)
}
