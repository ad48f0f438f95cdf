// A heartbeat monitor sees a stall of an executor it does not own, once, with the culprit's
// stack and the executor's label, and never wakes an executor that is idle.
import CStallwatchShims
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

/// A serial executor that is nothing but a thread and a queue: it parks on a condition
/// variable (a futex) when idle, as a custom thread's queue would.
final class TestExecutor: @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [@Sendable () -> Void] = []
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)
    /// The thread's voluntary context switches so far: each one a sleep, so a wake-up after.
    private(set) var threadPath = ""

    /// Whether it reports its ticks to `HeartbeatMonitor.tickEnded`, as a swift-nio event loop's
    /// metrics delegate does: a tick runs every task queued until none is left.
    private let reportsTicks: Bool
    /// The ticks longer than 30 ms it reported: start, end.
    let longTicks = Locked<[(start: UInt64, end: UInt64)]>([])

    init(name: String, reportsTicks: Bool = false) {
        self.reportsTicks = reportsTicks
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            threadPath =
                "/proc/" + ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? "")
            ready.signal()
            run()
            done.signal()
        }
        thread.name = name
        thread.start()
        ready.wait()
    }

    func execute(_ task: @escaping @Sendable () -> Void) {
        condition.lock()
        queue.append(task)
        condition.signal()
        condition.unlock()
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
        done.wait()
    }

    var wakeups: Int {
        guard let status = try? String(contentsOfFile: threadPath + "/status", encoding: .utf8) else { return -1 }
        let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
        return line.flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? -1
    }

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty && !stopped { condition.wait() }
            if stopped {
                condition.unlock()
                return
            }
            var batch = queue
            queue.removeAll()
            condition.unlock()
            let start = MainLoop.monotonicNanos()
            repeat {
                for task in batch { task() }
                condition.lock()
                batch = reportsTicks ? queue : []
                if reportsTicks { queue.removeAll() }
                condition.unlock()
            } while !batch.isEmpty
            guard reportsTicks else { continue }
            let end = MainLoop.monotonicNanos()
            HeartbeatMonitor.tickEnded(start: start, end: end)
            if end - start > 30_000_000 { longTicks.withLock { $0.append((start, end)) } }
        }
    }
}

/// A monitor on `executors` (16 ms budget), the stalls it ended and its warnings.
final class HeartbeatHarness: @unchecked Sendable {
    let monitor: HeartbeatMonitor
    let ended = Locked<[Stall]>([])
    let began = Locked<[Stall]>([])
    let warnings = Locked<[String]>([])
    var handles: [HeartbeatMonitor.Executor] = []

    init(
        _ executors: [(String, HeartbeatMonitor.Schedule)], warnAfter: Duration = .seconds(3),
        configure: (inout HeartbeatMonitor.Configuration) -> Void = { _ in }
    ) throws {
        var configuration = HeartbeatMonitor.Configuration()
        configuration.unservicedWarning = warnAfter
        configure(&configuration)
        monitor = HeartbeatMonitor(configuration: configuration)
        for (label, schedule) in executors { handles.append(monitor.watch(label: label, schedule: schedule)) }
        monitor.onStallBegan = { [began] stall in began.withLock { $0.append(stall) } }
        monitor.onStallEnded = { [ended] stall in ended.withLock { $0.append(stall) } }
        monitor.onWarning = { [warnings] message in warnings.withLock { $0.append(message) } }
        try monitor.start()
    }

    /// Waits until every executor ran a heartbeat and went quiet (its idle wait learned).
    func waitUntilSettled() {
        #expect(eventually { handles.allSatisfy { $0.heartbeatsRun > 0 } })
        usleep(100_000)
    }
}

@Suite(.serialized) struct HeartbeatMonitorTests {
    /// How a stall is timed by the tick that ran its heartbeat (due at 1,000 ms, 16 ms budget).
    @Test func theTickThatRanTheHeartbeatTimesTheStall() {
        let ms: UInt64 = 1_000_000
        let budget = 16 * ms
        func timed(_ tick: (UInt64, UInt64), end: UInt64) -> (UInt64, UInt64?) {
            var stall = Stall(
                id: 1, start: 1_000 * ms, end: end, tier: .hitch,
                callout: CalloutIdentity(kind: .post, file: "t", line: 1, phase: .beforeTimers))
            HeartbeatMonitor.time(&stall, due: 1_000 * ms, budget: budget, by: (tick.0 * ms, tick.1 * ms))
            return (stall.start / ms, stall.end.map { $0 / ms })
        }
        // Running when the heartbeat was sent: the tick is the stall.
        #expect(timed((990, 1_060), end: 1_061 * ms) == (990, 1_060))
        // Began just after (the executor woke for work queued ahead of the heartbeat) and long:
        // the tick is the stall, not the wake-up before it (seen in CI: a 0.1 ms "stall").
        #expect(timed((1_000 + 0, 1_060), end: 1_060 * ms) == (1_000, 1_060))
        #expect(timed((1_001, 1_061), end: 1_061 * ms) == (1_001, 1_061))
        // Began a budget or more after: the executor was busy outside its ticks until then.
        #expect(timed((1_040, 1_041), end: 1_041 * ms) == (1_000, 1_040))
        #expect(timed((1_020, 1_080), end: 1_080 * ms) == (1_000, 1_020))
    }

    /// An executor that reports its ticks: the stall is the tick that held it, to the
    /// microsecond at both ends (the heartbeat alone understates it by up to a check interval).
    @Test(.disabled(if: Sanitizer.thread, "TSan delivers the sampling signal late, away from the running culprit"))
    func aStallOnAnExecutorThatReportsItsTicksIsTimedByTheTick() throws {
        let executor = TestExecutor(name: "ticking-queue", reportsTicks: true)
        defer { executor.stop() }
        let harness = try HeartbeatHarness([("ticking-queue", { executor.execute($0) })])
        harness.waitUntilSettled()
        executor.execute { spinForStallTest(milliseconds: 60) }
        #expect(eventually { !harness.ended.withLock({ $0 }).isEmpty })
        usleep(100_000)
        harness.monitor.stop()
        let stalls = harness.ended.withLock { $0 }
        let ticks = executor.longTicks.withLock { $0 }
        #expect(stalls.count == 1, "\(stalls.map(\.durationNanos))")
        #expect(ticks.count == 1, "\(ticks)")
        guard let stall = stalls.first, let tick = ticks.first, let end = stall.end else { return }
        #expect(stall.start == tick.start && end == tick.end, "stall \(stall.start)...\(end), tick \(tick)")
        #expect(stall.topSymbols().contains { $0.contains("spinForStallTest") }, "\(stall.topSymbols())")
    }

    @Test(.disabled(if: Sanitizer.thread, "TSan delivers the sampling signal late, away from the running culprit"))
    func aComputeStallOnAnExecutorIsSeenOnceWithItsCulpritAndLabel() throws {
        let executor = TestExecutor(name: "custom-queue")
        defer { executor.stop() }
        let harness = try HeartbeatHarness([("custom-queue", { executor.execute($0) })])
        harness.waitUntilSettled()
        let measured = Locked<UInt64>(0)
        executor.execute {
            let start = MainLoop.monotonicNanos()
            spinForStallTest(milliseconds: 60)
            measured.withLock { $0 = MainLoop.monotonicNanos() - start }
        }
        #expect(eventually { !harness.ended.withLock({ $0 }).isEmpty })
        usleep(100_000)
        harness.monitor.stop()
        let stalls = harness.ended.withLock { $0 }
        #expect(stalls.count == 1, "\(stalls.map(\.durationNanos))")
        #expect(harness.began.withLock { $0.count } == 1)
        guard let stall = stalls.first else { return }
        #expect(stall.callout.label == "custom-queue")
        #expect(stall.callout.file == HeartbeatMonitor.calloutFile)
        #expect(stall.topSymbols().contains { $0.contains("spinForStallTest") }, "\(stall.topSymbols())")
        #expect(Classifier().breakdown(of: stall).dominant == .compute)
        // Due time → run: it understates the stall by at most a check interval (8.3 ms), plus
        // scheduling; it never overstates it by more than the heartbeat's own trip.
        let real = measured.withLock { $0 }
        #expect(stall.durationNanos <= real + 5_000_000, "stall \(stall.durationNanos) vs measured \(real)")
        #expect(stall.durationNanos + 30_000_000 >= real, "stall \(stall.durationNanos) vs measured \(real)")
    }

    /// Stallwatch's own work on an executor (each thread new to it is prepared for sampling, and
    /// a cold thread's first unwind is slow) is never timed as the executor's: an executor that
    /// runs every heartbeat at once on a thread of its own has no stall, and no stall is ever
    /// shorter than the budget.
    @Test func preparingAThreadNewToTheExecutorIsNotAStall() throws {
        // A thread made per job starts late by itself, which is the executor's own latency: 20 ms
        // under ASan, past the 16.7 ms default budget (a real stall of this executor, seen in a
        // sanitizer run). So the budget is 50 ms, and only Stallwatch's own 150 ms of work on each
        // new thread could make one here.
        let harness = try HeartbeatHarness([
            ("new-thread-each-time", { job in Thread.detachNewThread { job() } })
        ]) {
            $0.budget = .milliseconds(50)
            $0.preparationDelayForTesting = .milliseconds(150)
        }
        // Five: the watchdog had the whole of the fourth one's preparation to see (and wrongly
        // call a stall) before the fifth ran.
        #expect(eventually { harness.handles[0].heartbeatsRun >= 5 })
        harness.monitor.stop()
        let stalls = harness.began.withLock { $0 } + harness.ended.withLock { $0 }
        #expect(stalls.isEmpty, "\(stalls.map { ($0.durationNanos, $0.topSymbols().prefix(3)) })")
        let budget = UInt64(harness.monitor.configuration.budget.nanoseconds)
        #expect(harness.ended.withLock { $0 }.allSatisfy { $0.durationNanos > budget })
    }

    @Test func anIdleExecutorGetsNoHeartbeatsAndNoWakeups() throws {
        let executor = TestExecutor(name: "idle-queue")
        defer { executor.stop() }
        let harness = try HeartbeatHarness([("idle-queue", { executor.execute($0) })])
        harness.waitUntilSettled()
        let heartbeats = harness.handles[0].heartbeatsRun
        let wakeups = executor.wakeups
        let checks = harness.monitor.statistics.idleChecks
        usleep(1_000_000)
        #expect(harness.handles[0].heartbeatsRun == heartbeats)
        #expect(executor.wakeups == wakeups, "the idle executor woke \(executor.wakeups - wakeups) times")
        // The watchdog was looking all along (and saw it idle), it just sent nothing.
        #expect(harness.monitor.statistics.idleChecks > checks + 20)
        harness.monitor.stop()
        // Under TSan a thread can take longer than the budget to wake for a heartbeat sent
        // while its idle wait was being learned: real latency, reported as a stall.
        if !Sanitizer.thread { #expect(harness.ended.withLock { $0 }.isEmpty) }
    }

    @Test func aLockWaitInsideAJobIsNotMistakenForTheIdleWait() throws {
        // A job waits for a mutex a thread named 'cache-refresh' holds: a lock-wait stall, whose
        // samples have the same wait-for facts as a loop's (the owner) and the thread's counters.
        let executor = TestExecutor(name: "locking-queue")
        defer { executor.stop() }
        let harness = try HeartbeatHarness([("locking-queue", { executor.execute($0) })])
        harness.waitUntilSettled()
        nonisolated(unsafe) let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        defer { mutex.deallocate() }
        let owner = Box<Int32>(0)
        let held = DispatchSemaphore(value: 0)
        Thread {
            sw_set_thread_name("cache-refresh")
            owner.value = sw_gettid()
            FactCache.refresh(mutex, held: held, milliseconds: 70)
        }.start()
        held.wait()
        executor.execute { lockMutexForStallTest(mutex) }
        #expect(eventually { !harness.ended.withLock({ $0 }).isEmpty })
        harness.monitor.stop()
        let stalls = harness.ended.withLock { $0 }
        // Under TSan a heartbeat can also be late only because the thread is slow to wake.
        if !Sanitizer.thread { #expect(stalls.count == 1) }
        guard let stall = stalls.max(by: { $0.durationNanos < $1.durationNanos }) else {
            Issue.record("no stall")
            return
        }
        #expect(Classifier().breakdown(of: stall).dominant == .lockWait)
        if !Sanitizer.thread {  // TSan delivers the sampling signal late, after the lock is free
            #expect(stall.topSymbols().contains { $0.contains("lockMutexForStallTest") }, "\(stall.topSymbols())")
        }
        let owners = stall.samples.compactMap { $0.wait?.kind == .mutex ? $0.wait?.owner : nil }
        #expect(
            !owners.isEmpty && owners.count >= stall.samples.count / 2,
            "\(owners.count) of \(stall.samples.count) samples name the owner")
        #expect(owners.allSatisfy { $0.tid == owner.value && $0.name == "cache-refresh" }, "\(owners)")
        #expect(stall.samples.allSatisfy { $0.counters != nil }, "every sample has the thread's counters")
    }

    @Test func oneWatchdogWatchesManyExecutorsAndEachStallNamesItsOwn() throws {
        let executors = (0..<3).map { TestExecutor(name: "loop-\($0)") }
        defer { for executor in executors { executor.stop() } }
        let harness = try HeartbeatHarness(
            executors.enumerated().map { index, executor in ("loop-\(index)", { executor.execute($0) }) })
        harness.waitUntilSettled()
        let pipe = TestPipe()
        executors[2].execute { readPipeForStallTest(pipe.readFD) }
        executors[0].execute { sleepForStallTest(milliseconds: 80) }
        usleep(70_000)
        pipe.write("x")
        #expect(eventually { harness.ended.withLock({ $0 }).count >= 2 })
        usleep(100_000)
        harness.monitor.stop()
        var stalls = harness.ended.withLock { $0 }
        // Under TSan an idle loop can be slow enough to wake that a learning heartbeat is late.
        if Sanitizer.thread { stalls.removeAll { $0.callout.label == "loop-1" } }
        #expect(Set(stalls.compactMap(\.callout.label)) == ["loop-0", "loop-2"], "\(stalls.map(\.callout))")
        if !Sanitizer.thread { #expect(stalls.count == 2) }
        // The longest stall of each loop is the blocking work (under TSan a slow wake-up can
        // add a short one).
        let longest = Dictionary(stalls.map { ($0.callout.label ?? "?", $0) }) {
            $0.durationNanos >= $1.durationNanos ? $0 : $1
        }
        let categories = longest.mapValues { Classifier().breakdown(of: $0).dominant }
        #expect(categories["loop-2"] == .io)
        #expect(categories["loop-0"] == .other)
    }

    /// 16 or 64 loops on one monitor trapped 4 runs in 4 (an unsigned subtraction of two clock
    /// readings that could pass each other). 64 loops, every other one busy, on two cores keep
    /// the watchdog preempted often; it must survive and stop cleanly. No timing is asserted.
    @Test func sixtyFourLoopsOnOneMonitorDoNotCrashTheWatchdog() throws {
        let executors = (0..<64).map { TestExecutor(name: "busy-\($0)") }
        defer { for executor in executors { executor.stop() } }
        let harness = try HeartbeatHarness(
            executors.enumerated().map { index, executor in ("busy-\(index)", { executor.execute($0) }) })
        // Fifty 20 ms jobs on each busy loop; the test waits for them, not for a time.
        let done = DispatchGroup()
        for executor in executors.enumerated().filter({ $0.offset % 2 == 0 }).map(\.element) {
            done.enter()
            @Sendable func work(_ left: Int) {
                spinForStallTest(milliseconds: 20)
                if left > 0 { executor.execute { work(left - 1) } } else { done.leave() }
            }
            executor.execute { work(50) }
        }
        #expect(done.wait(timeout: .now() + 120) == .success)
        harness.monitor.stop()
        #expect(harness.monitor.statistics.heartbeatsSent > 0)
    }

    @Test func anExecutorThatNeverRunsItsHeartbeatGetsOneWarningAndNoStalls() throws {
        let harness = try HeartbeatHarness([("never-drained", { _ in })], warnAfter: .milliseconds(300))
        usleep(1_000_000)
        harness.monitor.stop()
        let warnings = harness.warnings.withLock { $0 }
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.contains("never-drained") == true)
        #expect(harness.ended.withLock { $0 }.isEmpty)
        #expect(harness.monitor.statistics.heartbeatsSent == 1)
    }
}
