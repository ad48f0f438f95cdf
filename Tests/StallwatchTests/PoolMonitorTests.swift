// A heartbeat monitor watching the Swift Concurrency pool reports jobs that wait past the budget
// to start, with what every pool thread was doing; never a pool of short jobs; and an idle pool
// wakes its watchdog not at all.
//
// The test bodies are async and wait with `await` only: a test function runs on the pool, and a
// body that blocked (usleep, a semaphore) would hold one of its few threads itself.
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

/// Blocks the pool thread it runs on (a job that should have been `await`ing).
@inline(never) func blockPoolThreadForTest(milliseconds: UInt32) {
    usleep(milliseconds * 1000)
}

/// Spins on the pool thread it runs on.
@inline(never) func spinPoolThreadForTest(milliseconds: UInt64) {
    spinForStallTest(milliseconds: milliseconds)
}

/// A monitor watching only the pool, and the stalls it ended.
final class PoolHarness: @unchecked Sendable {
    let monitor: HeartbeatMonitor
    let ended = Locked<[Stall]>([])
    let pool: HeartbeatMonitor.Executor

    init(budget: Duration = .milliseconds(20), preparationDelay: Duration = .zero) throws {
        var configuration = HeartbeatMonitor.Configuration()
        configuration.budget = budget
        configuration.preparationDelayForTesting = preparationDelay
        monitor = HeartbeatMonitor(configuration: configuration)
        pool = monitor.watchConcurrencyPool()
        monitor.onStallEnded = { [ended] stall in ended.withLock { $0.append(stall) } }
        try monitor.start()
    }

    /// Waits (without holding a pool thread) until `condition` holds, at most `timeout`.
    func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
        await Waiter().eventually(timeout: timeout, condition)
    }

    /// Waits until the first heartbeat ran (the pool's thread name is learned) and went quiet.
    func settle() async {
        #expect(await eventually { pool.heartbeatsRun > 0 })
        try? await Task.sleep(for: .milliseconds(100))
    }
}

/// More blocking jobs than the pool has threads: each waits for the ones before it.
private func starvePool(jobs: Int, milliseconds: UInt32) {
    for _ in 0..<jobs { Task.detached { blockPoolThreadForTest(milliseconds: milliseconds) } }
}

@Suite(.serialized) struct PoolMonitorTests {
    /// The pool's width on this machine: libdispatch gives the default-QoS pool one thread a core.
    static let width = ProcessInfo.processInfo.activeProcessorCount

    /// A pool thread's preparation for sampling (on the first heartbeat it runs: a cold thread's
    /// first unwind, 7.5 ms in `swift package resolve`) is Stallwatch's work, not the program's:
    /// no pool stall.
    @Test(.timeLimit(.minutes(1)))
    func preparingAPoolThreadIsNotAPoolStall() async throws {
        let harness = try PoolHarness(preparationDelay: .milliseconds(60))
        // Short jobs until heartbeats have run, each a chance for a thread new to the pool.
        // Five: the watchdog had the whole of the fourth one's preparation to see (and
        // wrongly call a stall) before the fifth ran.
        let ran = await harness.eventually {
            Task.detached {}
            return harness.pool.heartbeatsRun >= 5
        }
        #expect(ran, "\(harness.pool.heartbeatsRun) heartbeats ran")
        harness.monitor.stop()
        let stalls = harness.ended.withLock { $0 }
        #expect(stalls.isEmpty, "\(stalls.map { ($0.durationNanos, $0.topSymbols().prefix(3)) })")
    }

    @Test(
        .timeLimit(.minutes(1)),
        .disabled(
            if: Sanitizer.address,
            "ASan's usleep interceptor hides the blocker's frame from the stack scan of a sleeping thread (CI: 0 of 104 samples)"
        ))
    func aStarvedPoolIsOneStallSampledOnEveryPoolThreadWithTheBlocker() async throws {
        let harness = try PoolHarness()
        await harness.settle()
        // 4 × width jobs of 150 ms: the pool is starved for about 600 ms.
        starvePool(jobs: 4 * Self.width, milliseconds: 150)
        #expect(await harness.eventually { !harness.ended.withLock({ $0 }).isEmpty })
        try await Task.sleep(for: .milliseconds(200))
        harness.monitor.stop()
        let stalls = harness.ended.withLock { $0 }
        let longest = try #require(stalls.max { $0.durationNanos < $1.durationNanos })
        #expect(longest.callout.label == HeartbeatMonitor.poolLabel)
        #expect(longest.durationNanos > 300_000_000, "\(stalls.map(\.durationNanos))")
        let blocked = longest.samples.filter { sample in
            sample.frames.contains { $0.symbol?.contains("blockPoolThreadForTest") == true }
        }
        let share = Double(blocked.count) / Double(max(1, longest.samples.count))
        let others = longest.samples.filter { sample in !blocked.contains(sample) }.map { sample in
            "\(sample.source) \(sample.state) \(sample.syscallName ?? "-") \(sample.frames.prefix(4).map { $0.symbol ?? "?" })"
        }
        #expect(
            share >= 0.9, "\(blocked.count) of \(longest.samples.count) samples name the blocker; others: \(others)")
        #expect(Classifier().breakdown(of: longest).dominant == .other)  // usleep: a sleep
        #expect(longest.samples.allSatisfy { $0.counters != nil }, "every sample has its thread's counters")
        // Every pool thread was sampled: one sample each per interval.
        let pool = PoolThreads.threads(named: PoolThreads.defaultName).count
        #expect(pool >= Self.width)
        #expect(longest.samples.count >= 2 * Self.width)
        // Each sample names its thread and its look; a look samples each thread once, and the
        // looks follow one another.
        #expect(longest.samples.allSatisfy { $0.tid > 0 && $0.look != nil })
        let looks = Dictionary(grouping: longest.samples) { $0.look ?? .max }
        #expect(looks.values.allSatisfy { Set($0.map(\.tid)).count == $0.count })
        #expect(longest.samples.map { $0.look ?? .max } == longest.samples.map { $0.look ?? .max }.sorted())
    }

    @Test(
        .timeLimit(.minutes(1)),
        .disabled(if: Sanitizer.thread, "TSan delivers the sampling signal late, away from the running culprit"))
    func aPoolStarvedByComputeIsSampledInTheSpinningJobs() async throws {
        let harness = try PoolHarness()
        await harness.settle()
        // Spinning, not sleeping: a thread a heartbeat prepared takes the signal, another is
        // sampled by perf (or not at all where perf is refused: then only the prepared one).
        for _ in 0..<(3 * Self.width) { Task.detached { spinPoolThreadForTest(milliseconds: 100) } }
        #expect(await harness.eventually { !harness.ended.withLock({ $0 }).isEmpty })
        harness.monitor.stop()
        let longest = try #require(harness.ended.withLock { $0 }.max { $0.durationNanos < $1.durationNanos })
        let withStacks = longest.samples.filter { !$0.frames.isEmpty }
        // The spinning job's frames: its wrapper, or the spin it calls, where perf's unwind of its
        // bounded copy of the user stack stopped short of the wrapper (78 of 87 stacks had the
        // wrapper in one run, the other 9 `IndexingIterator.next() ← spinForStallTest` from perf).
        let spinning = withStacks.filter { sample in
            sample.frames.contains {
                $0.symbol?.contains("spinPoolThreadForTest") == true || $0.symbol?.contains("spinForStallTest") == true
            }
        }
        #expect(
            withStacks.count >= longest.samples.count / 2,
            "\(withStacks.count) of \(longest.samples.count) have a stack")
        #expect(
            Double(spinning.count) >= 0.9 * Double(withStacks.count),
            "\(spinning.count) of \(withStacks.count) stacks name the spinning job; others: \(withStacks.filter { sample in !spinning.contains { $0.time == sample.time } }.prefix(3).map { "\($0.source) " + $0.frames.prefix(6).map { $0.symbol ?? "?" }.joined(separator: " < ") })"
        )
        #expect(Classifier().breakdown(of: longest).dominant == .compute)
    }

    @Test(
        .timeLimit(.minutes(1)),
        TimingSensitive(
            reason: "with the machine's cores busy elsewhere (load 5 on 2 cores, seen), a heartbeat "
                + "waits for a CPU, not for the pool: 45 ms against a 40 ms budget once"))
    func aPoolThatIsAlwaysBusyWithShortJobsIsNeverReported() async throws {
        let harness = try PoolHarness(budget: .milliseconds(100))
        await harness.settle()
        // Jobs of 1 ms, never more of them in flight than the pool has threads: the pool is busy
        // for a second, and a new job never waits a budget to start. Detached, as the heartbeat
        // is: a task's priority picks its pool (a test's child tasks inherit the test's, and
        // libdispatch keeps one pool per priority), and the monitor watches the default one.
        let deadline = ContinuousClock.now + .seconds(1)
        while ContinuousClock.now < deadline {
            let jobs = (0..<Self.width).map { _ in Task.detached { spinPoolThreadForTest(milliseconds: 1) } }
            for job in jobs { await job.value }
        }
        harness.monitor.stop()
        #expect(harness.monitor.statistics.heartbeatsSent > 10)
        #expect(harness.ended.withLock { $0 }.isEmpty, "\(harness.ended.withLock { $0 }.map(\.durationNanos))")
    }

    @Test(.timeLimit(.minutes(1)))
    func anIdlePoolWakesTheWatchdogNotAtAll() async throws {
        let harness = try PoolHarness()
        await harness.settle()
        #expect(harness.monitor.statistics.poolEnqueueHook)
        // Read a second apart off the pool (a dispatch queue's timers), from 100 ms after this
        // task last ran: a job that resumes this test is an enqueue on the pool, which wakes the
        // watchdog (and gets a heartbeat) as any job does.
        let monitor = harness.monitor
        let (before, after) = await withCheckedContinuation { continuation in
            let queue = DispatchQueue(label: "idle-pool-test")
            queue.asyncAfter(deadline: .now() + 0.1) {
                let before = monitor.statistics
                queue.asyncAfter(deadline: .now() + 1) { continuation.resume(returning: (before, monitor.statistics)) }
            }
        }
        harness.monitor.stop()
        #expect(
            after.watchdogWakeups == before.watchdogWakeups,
            "woke \(after.watchdogWakeups - before.watchdogWakeups) times")
        #expect(after.heartbeatsSent == before.heartbeatsSent)
        #expect(after.poolParks >= 1)
    }

    @Test(.timeLimit(.minutes(1)))
    func aJobAfterIdleWakesTheWatchdogAndTheStarvationIsCaught() async throws {
        let harness = try PoolHarness()
        await harness.settle()
        let parks = harness.monitor.statistics.poolParks
        #expect(parks >= 1)
        starvePool(jobs: 3 * Self.width, milliseconds: 100)
        #expect(await harness.eventually { !harness.ended.withLock({ $0 }).isEmpty })
        harness.monitor.stop()
        let stall = try #require(harness.ended.withLock { $0 }.first)
        // Detected within a generous margin of start + budget (the hook woke the watchdog at
        // the first job; it sent a heartbeat at once).
        let latency = harness.monitor.statistics.detectionLatencyNanos.last ?? .max
        print("[pool] first sample \(latency / 1_000) µs after the deadline")
        #expect(latency < 50_000_000, "detected \(latency) ns after the deadline")
        #expect(stall.durationNanos > 100_000_000)
    }
}

/// A pool starvation recorded by `HeartbeatRecorder` is a stall like any other to the CLI.
@Suite(.serialized) struct PoolTraceTests {
    @Test(
        .timeLimit(.minutes(1)),
        .disabled(
            if: Sanitizer.address,
            "ASan's usleep interceptor hides the blocker's frame from the stack scan of a sleeping thread"))
    func aRecordedStarvationIsReportedAndShownWithTheBlocker() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-pool-\(UUID()).trace").path
        defer { unlink(path) }
        var configuration = HeartbeatMonitor.Configuration()
        configuration.budget = .milliseconds(20)
        let monitor = HeartbeatMonitor(configuration: configuration)
        let pool = monitor.watchConcurrencyPool()
        let recorder = try HeartbeatRecorder(path: path, monitor: monitor)
        let ended = Locked<[Stall]>([])
        recorder.onStallEnded = { stall in ended.withLock { $0.append(stall) } }
        try recorder.start()
        #expect(await Waiter().eventually { pool.heartbeatsRun > 0 })
        starvePool(jobs: 3 * PoolMonitorTests.width, milliseconds: 100)
        #expect(await Waiter().eventually { !ended.withLock({ $0 }).isEmpty })
        recorder.stop()
        let stall = try #require(ended.withLock { $0 }.max { $0.durationNanos < $1.durationNanos })

        if let keep = ProcessInfo.processInfo.environment["STALLWATCH_KEEP_POOL_TRACE"] {
            _ = try? FileManager.default.removeItem(atPath: keep)
            try FileManager.default.copyItem(atPath: path, toPath: keep)
        }
        let report = try runProduct("stallwatch", ["report", path])
        #expect(report.exitCode == 0, "\(report)")
        #expect(report.output.contains("blockPoolThreadForTest"), "\(report.output)")
        let show = try runProduct("stallwatch", ["show", path, "--stall", String(stall.id)])
        #expect(show.exitCode == 0, "\(show)")
        #expect(show.output.contains(HeartbeatMonitor.poolLabel), "\(show.output)")
        #expect(show.output.contains("blockPoolThreadForTest"), "\(show.output)")
        // Every pool thread ran a blocker: the representative stack is on all of them.
        let detail = try runProduct("stallwatch", ["show", path, "--stall", String(stall.id), "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(detail.output.utf8)) as? [String: Any])
        let threads = try #require(json["threads"] as? [String: Int], "\(detail.output.prefix(2_000))")
        #expect(threads["threads"] ?? 0 >= PoolMonitorTests.width, "\(threads)")
        #expect(threads["withStack"] ?? 0 >= PoolMonitorTests.width, "\(threads)")
        #expect(show.output.contains("threads   the representative stack on"), "\(show.output)")
    }
}

/// Waits (without holding a pool thread) until a condition holds.
struct Waiter {
    /// Whether `condition` held within `timeout`, looked at every 5 ms.
    func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }
}

/// What an LSP session needs (outside the suite: its traits read them).
enum LSPTools {
    /// `sourcekit-lsp` on the PATH (the toolchain's), if there is one.
    static let sourceKitLSP: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        return path.split(separator: ":").map { "\($0)/sourcekit-lsp" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }()

    static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
}

/// The toolchain's own language server, recorded unmodified: the preload library watches its
/// main queue and its pool, and the trace's run time is the session's, whatever either did.
/// Every test records a real LSP session: the toolchain's server, driven by python3, preloaded.
@Suite(
    .serialized,
    .enabled(
        if: LSPTools.sourceKitLSP != nil,
        "sourcekit-lsp is not on the PATH: no toolchain language server to record"),
    .enabled(
        if: LSPTools.python != nil,
        "python3 drives the LSP session (scripts/lsp-session.py) and is not installed"),
    .disabled(
        if: Sanitizer.address || Sanitizer.thread,
        "a sanitizer runtime must be the first library loaded; LD_PRELOAD puts ours before it"))
struct PoolPreloadTests {
    /// A recorded LSP session: `scripts/lsp-session.py` drives `stallwatch record -o TRACE
    /// OPTIONS -- sourcekit-lsp` in a new directory (a SwiftPM package when `manifest` is given)
    /// for `rounds` rounds of four requests, 0.3 s apart. The session's run, whose status and
    /// "shutdown ok" are checked here, and the trace's path (`directory` + ".swtrace"; a new
    /// directory unless given); `remove()` deletes the trace, its T.d and the directory.
    struct LSPSession {
        let run: ChildRun
        let trace: String
        let directory: String

        /// A new directory for a session, in the temporary directory.
        static func newDirectory() -> String {
            FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-lsp-\(UUID())").path
        }

        init(
            rounds: Int, options: [String] = [], manifest: String? = nil, directory: String = newDirectory(),
            sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            self.directory = directory
            trace = directory + ".swtrace"
            if let manifest {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                try manifest.write(toFile: directory + "/Package.swift", atomically: true, encoding: .utf8)
            }
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
            run = try ChildRun(
                LSPTools.python!,
                [
                    root.appendingPathComponent("scripts/lsp-session.py").path, directory, "--",
                    builtProduct("stallwatch"), "record", "-o", trace,
                ] + options + ["--", LSPTools.sourceKitLSP!],
                environment: ProcessInfo.processInfo.environment.merging(["LSP_ROUNDS": "\(rounds)"]) { _, new in new },
                sourceLocation: sourceLocation)
            #expect(run.exitCode == 0, "\(run)", sourceLocation: sourceLocation)
            #expect(run.output.contains("shutdown ok"), "\(run.output)", sourceLocation: sourceLocation)
        }

        func remove() {
            unlink(trace)
            try? FileManager.default.removeItem(atPath: trace + ".d")
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func sourceKitLSPIsRecordedForItsWholeSession() throws {
        // Eight rounds of four requests, 0.3 s apart: about 3 s.
        let session = try LSPSession(rounds: 8)
        defer { session.remove() }
        let path = session.trace
        let report = try runProduct("stallwatch", ["report", path, "--json"])
        #expect(report.exitCode == 0, "\(report)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.output.utf8)) as? [String: Any])
        let trace = try #require((json["traces"] as? [[String: Any]])?.first)
        #expect(trace["process"] as? String == "sourcekit-lsp")
        // sourcekit-lsp leaves with _Exit (no atexit, so the recorder is not stopped): the run
        // time ends at the writer's last once-a-second `recordedUntil`, so it is at least 1 s of
        // the session's ~3 s, not the 0 s of a trace timed by its stalls alone.
        let run = try #require(trace["runTimeSeconds"] as? Double)
        #expect(run >= 1.0, "run time \(run) s")
    }

    /// In a SwiftPM package sourcekit-lsp starts `swift-build` to prepare it, and the child
    /// inherits the recording: each process writes a whole trace of its own (none truncated by
    /// another: the pid in each header is the one its file is named for) and `report` reads the
    /// trace as the recording of all of them, each named.
    @Test(.timeLimit(.minutes(2)))
    func sourceKitLSPAndTheBuildItStartsEachWriteTheirOwnTrace() throws {
        let session = try LSPSession(
            rounds: 8,
            manifest: """
                // swift-tools-version:5.9
                import PackageDescription
                let package = Package(
                    name: "App", targets: [.executableTarget(name: "App", path: ".", sources: ["main.swift"])])

                """)
        defer { session.remove() }
        let path = session.trace
        let children = try FileManager.default.contentsOfDirectory(atPath: path + ".d").sorted()
        #expect(children.contains { $0.hasPrefix("swift-build-") }, "\(children)")
        var pids: [Int] = []
        for file in [path] + children.map({ path + ".d/" + $0 }) {
            // Each file alone: whole, and its own process's.
            let single = try runProduct("stallwatch", ["report", file, "--json"])
            #expect(single.exitCode == 0, "\(file): \(single)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(single.output.utf8)) as? [String: Any])
            let trace = try #require((json["traces"] as? [[String: Any]])?.first { $0["path"] as? String == file })
            let pid = try #require(trace["pid"] as? Int)
            if file == path {
                #expect(trace["process"] as? String == "sourcekit-lsp")
            } else {
                #expect(file.hasSuffix("-\(pid).swtrace"), "\(file): pid \(pid)")
            }
            pids.append(pid)
        }
        #expect(Set(pids).count == pids.count, "\(pids)")
        let report = try runProduct("stallwatch", ["report", path, "--wide"])
        #expect(report.exitCode == 0, "\(report)")
        #expect(
            report.output.contains("recording \(path), \(pids.count) processes: sourcekit-lsp \(pids[0]) (root)"),
            "\(report.output)")
        #expect(report.output.contains("swift-build"), "\(report.output)")
    }
}
