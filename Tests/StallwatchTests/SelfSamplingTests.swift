// The loop thread samples itself on time (a perf task-clock tick counting its user-mode CPU time):
// a late watchdog no longer delays detection or the first stack, a sleeping callout is never cut
// short, and an idle loop takes no ticks.
import Foundation
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct SelfSamplingTests {
    static let budget: UInt64 = 16_666_667

    /// Records an issue unless self-sampling runs (perf_event_open is allowed here and in CI).
    func expectOn(_ status: StallMonitor.SelfSampling, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        guard case .on = status else {
            Issue.record(
                "self-sampling is \(status) here (perf_event_open allowed in CI)", sourceLocation: sourceLocation)
            return false
        }
        return true
    }

    /// How late after its deadline the stall's first sample is.
    func detectionLateness(_ stall: Stall) -> UInt64 {
        let deadline = stall.start + Self.budget
        let first = stall.samples.first?.time ?? deadline
        return first > deadline ? first - deadline : 0
    }

    func lateWatchdogRun(selfSampling: Bool) async throws -> (Stall, StallMonitor.Statistics) {
        let run = try await monitored(
            configure: {
                $0.selfSampling = selfSampling
                $0.watchdogLatenessForTesting = .milliseconds(50)
            },
            { loop, measure in measure.post(loop) { spinForStallTest(milliseconds: 90) } })
        let ours = run.ended.filter { $0.callout.file == "StallwatchTests/SelfSamplingTests.swift" }
        #expect(ours.count == 1, "stalls: \(run.ended.map(\.callout))")
        return (try #require(ours.first), run.statistics)
    }

    /// The watchdog gets no CPU for 50 ms after the callout begins, 33 ms past its deadline (as
    /// on a busy machine without SCHED_FIFO):
    /// the first sample is still the loop thread's own, taken at the deadline, with the culprit.
    /// Without self-sampling the same run's first sample is at least 30 ms late: the peer.
    @Test(.disabled(if: Sanitizer.thread, "TSan delivers signals late, away from the running culprit"))
    func aLateWatchdogStillGetsTheStackTakenAtTheDeadline() async throws {
        let (own, statistics) = try await lateWatchdogRun(selfSampling: true)
        guard expectOn(statistics.selfSampling) else { return }
        let (peer, peerStatistics) = try await lateWatchdogRun(selfSampling: false)
        print(
            "[self-sampling] first sample \(detectionLateness(own) / 1000) us after the deadline "
                + "(\(statistics.selfSamples) own samples); without: \(detectionLateness(peer) / 1000) us")
        #expect(peerStatistics.selfSamples == 0)
        #expect(detectionLateness(peer) >= 30_000_000)
        // One tick period (0.5 ms of its CPU time) after the deadline, plus scheduling: far less
        // than the watchdog's 33 ms.
        #expect(detectionLateness(own) < 25_000_000, "\(own.samples.map(\.time))")
        #expect(statistics.selfSamples >= 1)
        let first = try #require(own.samples.first)
        #expect(first.source == .signal)
        #expect(first.state == .running)
        #expect(first.frames.contains { $0.symbol?.contains("spinForStallTest") == true }, "\(first.frames)")
        // Samples stay in time order, own and the watchdog's mixed.
        #expect(own.samples.map(\.time) == own.samples.map(\.time).sorted())
    }

    /// The watchdog gets no CPU for 80 ms, longer than the whole 45 ms stall: it never sees the
    /// callout running. The loop thread's own handler declared it, the loop stamped its end, and
    /// the watchdog records it afterwards, once, with the thread's own stacks and exact duration.
    @Test(.disabled(if: Sanitizer.thread, "TSan delivers signals late, away from the running culprit"))
    func aStallTheWatchdogNeverSawIsStillRecorded() async throws {
        let run = try await monitored(
            settle: .milliseconds(300),
            configure: {
                $0.selfSampling = true
                $0.watchdogLatenessForTesting = .milliseconds(80)
            },
            { loop, measure in measure.post(loop) { spinForStallTest(milliseconds: 45) } })
        guard expectOn(run.statistics.selfSampling) else { return }
        let ours = run.ended.filter { $0.callout.file == "StallwatchTests/SelfSamplingTests.swift" }
        #expect(ours.count == 1, "stalls: \(run.ended.map(\.callout))")
        #expect(run.began.filter { $0.callout.file == "StallwatchTests/SelfSamplingTests.swift" }.count == 1)
        #expect(run.statistics.missedByWatchdog >= 1)
        let stall = try #require(ours.first)
        let measured = try #require(run.measured.first)
        let duration = try #require(stall.end) - stall.start
        // The loop's own stamps at both ends, like any stall: within a millisecond of what the
        // callout measured around itself.
        #expect(duration >= measured && duration - measured < 1_000_000, "\(duration) vs \(measured)")
        #expect(!stall.flags.contains(.unfinished))
        let first = try #require(stall.samples.first, "the stall has samples")
        #expect(stall.samples.allSatisfy { $0.source == .signal })
        #expect(first.frames.contains { $0.symbol?.contains("spinForStallTest") == true })
        #expect(detectionLateness(stall) < 15_000_000)
    }

    /// A callout that computes past its budget (ticks arrive) and then sleeps: the sleep is not cut
    /// short (a wall-clock timer signal would end nanosleep with EINTR), and the stall is whole.
    @Test(
        .disabled(
            if: Sanitizer.thread,
            "self-sampling stands aside under TSan, whose deferred signal handlers let the signal path that replaces it land in the sleep (docs/watchdog.md, the lost stall)"
        ))
    func aSleepInAStalledCalloutIsNeverInterrupted() async throws {
        let results = Locked<[Int32]>([])
        let run = try await monitored(
            configure: { $0.selfSampling = true },
            { loop, measure in
                measure.post(loop) {
                    spinForStallTest(milliseconds: 40)
                    var request = timespec(tv_sec: 0, tv_nsec: 60_000_000)
                    var remaining = timespec()
                    let rc = nanosleep(&request, &remaining)
                    results.withLock { $0.append(rc == 0 ? 0 : errno) }
                }
            })
        #expect(results.withLock { $0 } == [0], "nanosleep was interrupted: \(results.withLock { $0 })")
        let measured = try #require(run.measured.first)
        #expect(measured >= 100_000_000)
        let ours = run.ended.filter { $0.callout.file == "StallwatchTests/SelfSamplingTests.swift" }
        #expect(ours.count == 1)
    }

    /// No ticks while the loop idles (the event counts its CPU time), some while it computes.
    @Test(.disabled(if: Sanitizer.thread, "self-sampling stands aside under TSan, which defers signal handlers"))
    func anIdleLoopTakesNoTicks() async throws {
        let counts = try await onLoopThreadThrowing { loop -> (idle: UInt64, busy: UInt64, status: String) in
            var configuration = StallMonitor.Configuration()
            configuration.selfSampling = true
            let monitor = StallMonitor(loop: loop, configuration: configuration)
            try monitor.start()
            defer { monitor.stop() }
            guard case .on = monitor.statistics.selfSampling, let own = monitor.selfSampler else {
                return (0, 0, "\(monitor.statistics.selfSampling)")
            }
            // Let the posted enable run, then idle for a second.
            loop.runOnce(timeout: .milliseconds(50))
            let before = own.counters.ticks
            let end = MainLoop.monotonicNanos() + 1_000_000_000
            while MainLoop.monotonicNanos() < end { loop.runOnce(timeout: .milliseconds(200)) }
            let idle = own.counters.ticks - before
            loop.post { spinForStallTest(milliseconds: 50) }
            loop.runOnce(timeout: .milliseconds(200))
            return (idle, own.counters.ticks - before - idle, "\(monitor.statistics.selfSampling)")
        }
        print("[self-sampling] \(counts.status): idle 1 s: \(counts.idle) ticks; 50 ms of compute: \(counts.busy)")
        #expect(counts.status.hasPrefix("on"), "\(counts.status)")
        #expect(counts.idle == 0)
        // The handler spaces ticks out away from deadlines, and a loaded CI machine gives the
        // thread less CPU (3 in 50 ms once): some, where an idle second gave none.
        #expect(counts.busy >= 1)
    }

    /// `STALLWATCH_PERF=0` turns self-sampling off with the rest of perf.
    @Test(.disabled(if: Sanitizer.thread, "self-sampling stands aside under TSan, which defers signal handlers"))
    func theEnvironmentSwitchTurnsItOff() throws {
        let off = try runProduct("StallwatchTestHost", ["perf-status"], environment: ["STALLWATCH_PERF": "0"])
        #expect(off.output.contains("selfSampling=disabled"), "\(off.output)\(off.error)")
        let on = try runProduct("StallwatchTestHost", ["perf-status"], environment: ["STALLWATCH_PERF": "1"])
        #expect(on.output.contains("selfSampling=on"), "\(on.output)\(on.error)")
    }

    /// An executor's heartbeat stall running `work`, the watchdog `lateness` behind its deadline,
    /// ticks from `tick`: the executor thread's own ticks give its first stack. The one stall on
    /// `custom-queue`, and statistics.
    func heartbeatRun(
        lateness: Duration = .zero, tick: MonitorConfiguration.SelfSamplingTick,
        _ work: @escaping @Sendable () -> Void
    ) throws -> ([Stall], HeartbeatMonitor.Statistics) {
        let executor = TestExecutor(name: "custom-queue")
        defer { executor.stop() }
        let harness = try HeartbeatHarness([("custom-queue", { executor.execute($0) })]) {
            $0.selfSampling = true
            $0.selfSamplingTick = tick
            $0.watchdogLatenessForTesting = lateness
        }
        harness.waitUntilSettled()
        executor.execute(work)
        #expect(eventually { !harness.ended.withLock({ $0 }).isEmpty })
        usleep(150_000)
        harness.monitor.stop()
        return (harness.ended.withLock { $0 }, harness.monitor.statistics)
    }

    /// Both tick sources (`HeartbeatMonitor`'s default is the thread CPU timer).
    static let ticks: [MonitorConfiguration.SelfSamplingTick] = [.threadCPUTimer, .perfTaskClock]

    /// The heartbeat monitor's watchdog wakes 30 ms after a heartbeat's deadline: the executor's
    /// thread took its own stack at the deadline, and the stall's first sample is that one. (The
    /// CPU timer's ticks come at the scheduler tick, 4 ms apart at HZ=250: well within 25 ms.)
    @Test(
        .disabled(if: Sanitizer.thread, "TSan delivers signals late, away from the running culprit"),
        arguments: ticks)
    func aLateHeartbeatWatchdogStillGetsTheStackTakenAtTheDeadline(
        tick: MonitorConfiguration.SelfSamplingTick
    ) throws {
        let (stalls, statistics) = try heartbeatRun(lateness: .milliseconds(30), tick: tick) {
            spinForStallTest(milliseconds: 120)
        }
        guard expectOn(statistics.selfSampling) else { return }
        #expect("\(statistics.selfSampling)".contains("\(tick)"), "\(statistics.selfSampling)")
        #expect(stalls.count == 1, "\(stalls.map(\.durationNanos))")
        let stall = try #require(stalls.first)
        let first = try #require(stall.samples.first)
        // Before the watchdog's 30 ms: the thread's own capture (16 ms after once, on a loaded CI).
        #expect(first.time < stall.start + Self.budget + 25_000_000, "\(stall.samples.map(\.time))")
        #expect(first.frames.contains { $0.symbol?.contains("spinForStallTest") == true }, "\(first.frames)")
        #expect(statistics.selfSamples >= 1)
    }

    /// The watchdog oversleeps by 120 ms, longer than the whole stall: the heartbeat ran late
    /// before it looked. The executor's own captures show it ran user code past the budget, so the
    /// stall is recorded, timed from the heartbeat. (A 45 ms spin once got too little CPU under
    /// ASan in CI to run past the budget at a tick.)
    @Test(
        .disabled(if: Sanitizer.thread, "TSan delivers signals late, away from the running culprit"),
        arguments: ticks)
    func aHeartbeatStallTheWatchdogNeverSawIsStillRecorded(tick: MonitorConfiguration.SelfSamplingTick) throws {
        let (stalls, statistics) = try heartbeatRun(lateness: .milliseconds(120), tick: tick) {
            spinForStallTest(milliseconds: 70)
        }
        guard expectOn(statistics.selfSampling) else { return }
        #expect(stalls.count == 1, "\(stalls.map(\.durationNanos))")
        #expect(statistics.missedByWatchdog == 1)
        let stall = try #require(stalls.first)
        #expect(stall.callout.label == "custom-queue")
        // From the heartbeat's due time to when it ran: over the budget, and within the spin plus
        // the few milliseconds a heartbeat sent just before the spin began waits behind it.
        #expect(stall.durationNanos > 16_000_000 && stall.durationNanos < 90_000_000, "\(stall.durationNanos)")
        #expect(stall.samples.first?.frames.contains { $0.symbol?.contains("spinForStallTest") == true } == true)
    }

    /// An executor that computes past its budget (ticks arrive) and then sleeps: the sleep is
    /// whole with either tick source. The CPU timer counts system time too, but its signal is
    /// sent on the return to user mode (`CONFIG_POSIX_CPU_TIMERS_TASK_WORK`), never into a sleep.
    @Test(
        .disabled(
            if: Sanitizer.thread,
            "self-sampling stands aside under TSan, whose deferred signal handlers let the signal path that replaces it land in the sleep (docs/watchdog.md, the lost stall)"
        ),
        arguments: ticks)
    func aSleepInAHeartbeatStallIsNeverInterrupted(tick: MonitorConfiguration.SelfSamplingTick) throws {
        let results = Locked<[Int32]>([])
        let (stalls, statistics) = try heartbeatRun(tick: tick) {
            // 40 ms of the thread's CPU, not of the wall clock: its own ticks must come in the
            // spin past the deadline (a wall-clock spin kept off the CPU by load took none).
            spinOnCPUForStallTest(milliseconds: 40)
            var request = timespec(tv_sec: 0, tv_nsec: 60_000_000)
            var remaining = timespec()
            let rc = nanosleep(&request, &remaining)
            results.withLock { $0.append(rc == 0 ? 0 : errno) }
        }
        guard expectOn(statistics.selfSampling) else { return }
        #expect(results.withLock { $0 } == [0], "nanosleep was interrupted: \(results.withLock { $0 })")
        #expect(stalls.count == 1, "\(stalls.map(\.durationNanos))")
        #expect(statistics.selfSamples >= 1, "the spin's own ticks")
    }
}
