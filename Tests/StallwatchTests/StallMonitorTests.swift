// Each real stall on a monitored loop is detected exactly once, from the moment start() returns
// and however late the watchdog runs; it spans exactly the work the stalling code timed itself
// (never shorter, longer only by the loop's own bookkeeping around it); it is sampled without
// ever signalling the thread while it samples itself, attributed to its posting site, and its
// culprit shows up in the symbolicated stack; short or nested work is never a stall.
import CSQLite
import CStallwatchSampler
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct StallMonitorTests {
    /// The common assertions for a scenario with one stalling callout posted at `line`.
    func expectOneStall(
        _ run: MonitoredRun, culprit: String, alsoAny: [String] = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(run.ended.count == 1, "stalls: \(run.ended.map(\.callout))", sourceLocation: sourceLocation)
        #expect(run.began.count == 1, sourceLocation: sourceLocation)
        guard let stall = run.ended.first, let measured = run.measured.first else { return }
        // The loop's stamps wrap the work's own clock reads: the stall starts before the work and
        // ends after it (but for the TSC's conversion to CLOCK_MONOTONIC, tens of microseconds),
        // and is longer only by the loop's bookkeeping around it — or by the time the loop thread
        // lost its CPU between its stamp and the work's first read, which is the callout's time
        // too (12.8 ms once under ASan in CI): no upper bound can hold for that.
        let window = run.windows[0]
        #expect(
            stall.start <= window.lowerBound + 100_000 && (stall.end ?? 0) + 100_000 >= window.upperBound,
            "stall \(stall.start)…\(stall.end ?? 0) vs the work \(window)", sourceLocation: sourceLocation)
        #expect(stall.durationNanos + 100_000 >= measured, sourceLocation: sourceLocation)
        #expect(!stall.samples.isEmpty, sourceLocation: sourceLocation)
        #expect(stall.callout.file == "StallwatchTests/StallMonitorTests.swift", sourceLocation: sourceLocation)
        #expect(stall.callout.line == UInt32(run.postedAt?.line ?? 0), sourceLocation: sourceLocation)
        #expect(stall.callout.kind == .post, sourceLocation: sourceLocation)
        let symbols = stall.topSymbols()
        #expect(
            symbols.contains { $0.contains(culprit) }, "no \(culprit) in \(symbols)", sourceLocation: sourceLocation)
        if !alsoAny.isEmpty {
            #expect(
                symbols.contains { symbol in alsoAny.contains { symbol.contains($0) } },
                "none of \(alsoAny) in \(symbols)", sourceLocation: sourceLocation)
        }
    }

    @Test(.disabled(if: Sanitizer.thread, "TSan delivers the sampling signal late, away from the running culprit"))
    func computeSpin() async throws {
        let run = try await monitored { loop, measure in
            measure.post(loop) { spinForStallTest(milliseconds: 60) }
        }
        expectOneStall(run, culprit: "spinForStallTest")
        #expect(run.ended.first?.samples.contains { $0.state == .running } == true)
    }

    @Test func sleep() async throws {
        let run = try await monitored { loop, measure in
            measure.post(loop) { sleepForStallTest(milliseconds: 60) }
        }
        expectOneStall(run, culprit: "sleepForStallTest", alsoAny: ["nanosleep", "usleep"])
        // Sampling must not end the sleep early (a signal would make usleep return EINTR).
        #expect((run.measured.first ?? 0) >= 60_000_000)
    }

    @Test func pipeReadWithALateWriter() async throws {
        let pipe = TestPipe()
        let run = try await monitored { loop, measure in
            measure.post(loop) { readPipeForStallTest(pipe.readFD) }
            Thread {
                usleep(70_000)
                pipe.write("x")
            }.start()
        }
        expectOneStall(run, culprit: "readPipeForStallTest", alsoAny: ["read"])
    }

    @Test func mutexHeldByAnotherThread() async throws {
        nonisolated(unsafe) let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        defer { mutex.deallocate() }
        holdElsewhere(milliseconds: 70, lock: { pthread_mutex_lock(mutex) }, unlock: { pthread_mutex_unlock(mutex) })
        let run = try await monitored { loop, measure in
            measure.post(loop) { lockMutexForStallTest(mutex) }
        }
        expectOneStall(run, culprit: "lockMutexForStallTest", alsoAny: ["pthread_mutex_lock", "lll_lock"])
    }

    @Test func conditionWait() async throws {
        let condition = NSCondition()
        let flag = Box(false)
        let run = try await monitored { loop, measure in
            measure.post(loop) { waitConditionForStallTest(condition, until: flag) }
            Thread {
                usleep(70_000)
                condition.lock()
                flag.value = true
                condition.signal()
                condition.unlock()
            }.start()
        }
        expectOneStall(run, culprit: "waitConditionForStallTest", alsoAny: ["pthread_cond_wait", "futex"])
    }

    @Test(.disabled(if: Sanitizer.thread, "TSan delivers the sampling signal late, away from the running culprit"))
    func slowSQLiteQuery() async throws {
        var db: OpaquePointer?
        #expect(sqlite3_open(":memory:", &db) == SQLITE_OK)
        defer { sqlite3_close(db) }
        nonisolated(unsafe) let connection = db!
        let run = try await monitored { loop, measure in
            measure.post(loop) { blackHole(slowQueryForStallTest(connection, rows: 1_500_000)) }
        }
        expectOneStall(run, culprit: "slowQueryForStallTest", alsoAny: ["sqlite3"])
    }

    @Test func fsyncOfAFreshLargeFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-fsync-\(UUID())").path
        defer { unlink(path) }
        let run = try await monitored { loop, measure in
            measure.post(loop) { fsyncForStallTest(path: path, megabytes: 64) }
        }
        // The write may finish within the budget on a fast disk; the whole callout is timed.
        #expect(run.ended.count == 1)
        guard let stall = run.ended.first, let measured = run.measured.first else { return }
        #expect(abs(Int64(stall.durationNanos) - Int64(measured)) < 3_000_000)
        #expect(stall.callout.line == UInt32(run.postedAt?.line ?? 0))
        let sawWrite = stall.samples.contains { [1, 74].contains($0.syscall ?? 0) || $0.state == .diskSleep }
        let symbols = stall.topSymbols()
        #expect(sawWrite || symbols.contains { $0.contains("fsync") || $0.contains("write") }, "\(stall.samples)")
    }

    @Test func shortCalloutsAreNeverStalls() async throws {
        let run = try await monitored { loop, measurements in
            for _ in 0..<1_000 { measurements.post(loop) { usleep(5_000) } }
        }
        // On a quiet machine none is a stall. On a loaded one a sleep can wake late, or the thread
        // lose its CPU around the work, and that one callout really overruns: it is reported, and
        // every stall is exactly one callout — it spans one timed work and no other (128 run per
        // iteration: 640 ms together, never a stall). Every work that itself overran is a stall.
        let windows = run.windows
        for stall in run.ended {
            let end = stall.end ?? stall.start
            let spanned = windows.filter { stall.start <= $0.lowerBound + 100_000 && end + 100_000 >= $0.upperBound }
            #expect(spanned.count == 1, "a \(stall.durationNanos) ns stall spans \(spanned.count) callouts")
        }
        for window in windows where window.upperBound - window.lowerBound > 16_766_667 {
            #expect(
                run.ended.contains {
                    $0.start <= window.lowerBound + 100_000 && ($0.end ?? 0) + 100_000 >= window.upperBound
                },
                "a callout of \(window.upperBound - window.lowerBound) ns was no stall")
        }
        // 128 posts of 5 ms run per iteration: those iterations overran the budget together.
        #expect(run.statistics.congestedIterations > 0)
    }

    @Test func aNestedLoopThatKeepsServicingIsNotAStall() async throws {
        let run = try await monitored { loop, _ in
            loop.post {
                var ticks = 0
                let timer = loop.schedule(after: .milliseconds(1), repeating: .milliseconds(4)) { _ in ticks += 1 }
                loop.run(mode: .default, until: .now + .milliseconds(150))
                timer.cancel()
                blackHole(ticks)
            }
        }
        #expect(run.ended.isEmpty, "\(run.ended.map(\.callout))")
    }

    @Test func aStallPostedTheMomentStartReturnsIsCaughtEveryTime() async throws {
        // 200 starts, each followed at once by a 40 ms stall: a sleep (no tick of its own: only
        // the watchdog or the loop's own stamps can see it) or a spin, alternately. A sleep
        // that a signal cut short would be a shorter stall: the sleep says so itself, and the
        // watchdog must not have signalled the thread at all while it sampled itself (under
        // ThreadSanitizer it cannot, and the watchdog signals instead).
        let stalls = Locked<[(round: Int, label: String?, nanos: UInt64)]>([])
        let cut = Locked<[String]>([])
        let signalled = Locked<[String]>([])
        let rounds = 200
        try await onLoopThreadThrowing { loop in
            for round in 0..<rounds {
                let monitor = StallMonitor(loop: loop)
                monitor.onStallEnded = { stall in
                    stalls.withLock { $0.append((round, stall.callout.label, stall.durationNanos)) }
                }
                try monitor.start()
                if round % 2 == 0 {
                    loop.post(label: "sleep") {
                        let start = MainLoop.monotonicNanos()
                        let result = usleep(40_000)
                        let error = errno
                        let slept = MainLoop.monotonicNanos() - start
                        if result != 0 || slept < 40_000_000 {
                            cut.withLock {
                                $0.append("round \(round): usleep \(result) errno \(error) after \(slept) ns")
                            }
                        }
                    }
                } else {
                    loop.post(label: "spin") { spinForStallTest(milliseconds: 40) }
                }
                loop.runOnce(timeout: .milliseconds(100))
                monitor.stop()
                let statistics = monitor.statistics
                var selfSamples = false
                if case .on = statistics.selfSampling { selfSamples = true }
                if statistics.captures > 0 || !selfSamples {
                    signalled.withLock {
                        $0.append(
                            "round \(round): \(statistics.captures) signals, self-sampling \(statistics.selfSampling)")
                    }
                }
            }
        }
        let seen = stalls.withLock { $0 }
        #expect(cut.withLock { $0 }.isEmpty, "a sleep was cut short: \(cut.withLock { $0 })")
        if !Sanitizer.thread {
            #expect(signalled.withLock { $0 }.isEmpty, "the watchdog signalled: \(signalled.withLock { $0 })")
        }
        for round in 0..<rounds {
            let mine = seen.filter { $0.round == round }
            #expect(mine.count == 1, "round \(round): \(mine)")
            #expect(
                mine.allSatisfy { $0.label == (round % 2 == 0 ? "sleep" : "spin") && $0.nanos >= 40_000_000 },
                "round \(round): \(mine)")
        }
    }

    @Test(.disabled(if: Sanitizer.thread, "self-sampling stands aside under TSan: the watchdog signals then"))
    func aCalloutThatBlocksTheTicksIsSampledBySignalInstead() async throws {
        // The thread masks the ticks' signal (as code that blocks signals around a critical
        // section does): its own captures stop, and the watchdog, seeing the tick blocked and
        // pending, signals it instead (its sampling signal is another one).
        let run = try await monitored { loop, measure in
            measure.post(loop) {
                var blocked = sigset_t()
                var previous = sigset_t()
                sigemptyset(&blocked)
                sigaddset(&blocked, sw_self_default_signal())
                pthread_sigmask(SIG_BLOCK, &blocked, &previous)
                spinForStallTest(milliseconds: 80)
                pthread_sigmask(SIG_SETMASK, &previous, nil)
            }
        }
        guard case .on = run.statistics.selfSampling else {
            Issue.record("self-sampling is \(run.statistics.selfSampling)")
            return
        }
        let stall = try #require(run.ended.first, "\(run.ended.count) stalls")
        #expect(run.ended.count == 1)
        #expect(run.statistics.captures > 0, "the watchdog sent no signal")
        #expect(stall.samples.contains { $0.frames.contains { $0.symbol?.contains("spinForStallTest") == true } })
    }

    @Test(.disabled(if: Sanitizer.thread, "self-sampling stands aside under TSan: the watchdog signals then"))
    func aThreadThatSamplesItselfIsNeverSignalled() async throws {
        // A signal that lands after the work it was meant for cuts the next callout's sleep short
        // (EINTR): that was how a sleep stall right behind a spin went missing.
        let run = try await monitored { loop, measure in
            measure.post(loop) { spinForStallTest(milliseconds: 60) }
            measure.post(loop) { sleepForStallTest(milliseconds: 60) }
            measure.post(loop) { spinForStallTest(milliseconds: 60) }
        }
        guard case .on = run.statistics.selfSampling else {
            Issue.record("self-sampling is \(run.statistics.selfSampling)")
            return
        }
        #expect(run.statistics.captures == 0, "the watchdog sent \(run.statistics.captures) signals")
        #expect(run.ended.count == 3, "\(run.ended.map(\.durationNanos))")
        #expect(run.measured.count == 3 && run.measured[1] >= 60_000_000, "the sleep took \(run.measured)")
    }

    @Test func aStallTheWatchdogNeverSawIsRecordedFromTheLoopsOwnStamps() async throws {
        // The watchdog gets no CPU for 300 ms after it sees each callout begin: the 60 ms sleep is
        // over before it looks. The loop logged it, with its exact start and end.
        let late: @Sendable (inout StallMonitor.Configuration) -> Void = {
            $0.watchdogLatenessForTesting = .milliseconds(300)
        }
        let run = try await monitored(configure: late) { loop, measure in
            measure.post(loop) { sleepForStallTest(milliseconds: 60) }
        }
        #expect(run.ended.count == 1, "\(run.ended.map(\.durationNanos))")
        #expect(run.statistics.missedByWatchdog == 1)
        guard let stall = run.ended.first, let window = run.windows.first else { return }
        #expect(stall.start <= window.lowerBound + 100_000 && (stall.end ?? 0) + 100_000 >= window.upperBound)
        #expect(stall.durationNanos < window.upperBound - window.lowerBound + 1_000_000)
        #expect(stall.callout.line == UInt32(run.postedAt?.line ?? 0))
    }

    @Test func aStallEndsWithItsCalloutWhenTheNextOneOverranBeforeTheWatchdogLooked() async throws {
        // The watchdog times the first spin; when it ends, the watchdog gets no CPU for 150 ms,
        // while the second spin overruns too and leaves its own end on the board. The first
        // stall still ends where its callout did (the loop's log has it), not when the watchdog
        // looked, and the second is a stall of its own.
        let late: @Sendable (inout StallMonitor.Configuration) -> Void = {
            $0.watchdogLatenessAtStallEndForTesting = .milliseconds(150)
        }
        let run = try await monitored(configure: late) { loop, measure in
            measure.post(loop) { spinForStallTest(milliseconds: 60) }
            measure.post(loop) { spinForStallTest(milliseconds: 60) }
        }
        #expect(run.ended.count == 2, "\(run.ended.map(\.durationNanos))")
        for (stall, window) in zip(run.ended.sorted { $0.start < $1.start }, run.windows) {
            #expect(stall.start <= window.lowerBound + 100_000 && (stall.end ?? 0) + 100_000 >= window.upperBound)
            #expect(
                stall.durationNanos < window.upperBound - window.lowerBound + 1_000_000,
                "a \(stall.durationNanos) ns stall of a \(window.upperBound - window.lowerBound) ns callout")
        }
    }

    @Test func durationsPastTheClocksRangeInTheConfigurationDoNotTrap() async throws {
        // A budget and tick period of 292 billion years: each conversion to cycles or
        // nanoseconds saturates (an overflow would trap, or wrap the deadline into the past and
        // make every callout a stall), so nothing is a stall and the monitor starts and stops.
        let huge: @Sendable (inout StallMonitor.Configuration) -> Void = {
            $0.budget = .seconds(Int64.max)
            $0.selfSamplingPeriod = .seconds(Int64.max)
        }
        let run = try await monitored(configure: huge) { loop, measure in
            measure.post(loop) { spinForStallTest(milliseconds: 40) }
        }
        #expect(run.ended.isEmpty, "\(run.ended.map(\.durationNanos))")
    }

    /// Stopping a monitor that never started, or one already stopped, does nothing; a stopped
    /// monitor leaves the loop unwatched (no watchdog thread, nothing attached, no budget) and
    /// reports nothing more (a 60 ms stall after its stop, and the next monitor's, are not its),
    /// so another monitor can watch the same loop and sees its stalls.
    @Test func stopStartStopIsClean() async throws {
        let stalls = try await onLoopThreadThrowing { loop -> [Stall] in
            let watchdogsBefore = watchdogThreads()
            let board = loop.board
            let attached = { board.monitorAttached.load(ordering: .acquiring) }
            let monitor = StallMonitor(loop: loop)
            let reportedToFirst = Locked<[Stall]>([])
            monitor.onStallBegan = { stall in reportedToFirst.withLock { $0.append(stall) } }
            monitor.onStallEnded = { stall in reportedToFirst.withLock { $0.append(stall) } }
            monitor.stop()
            #expect(!monitor.isRunning && !attached())
            try monitor.start()
            #expect(monitor.isRunning && attached())
            #expect(watchdogThreads() == watchdogsBefore + 1)
            loop.runOnce(timeout: .milliseconds(10))
            monitor.stop()
            monitor.stop()
            let enabled = board.enabled.load(ordering: .acquiring)
            let budgetCycles = board.budgetCycles.load(ordering: .relaxed)
            let watching = board.monitor.withLock { $0.value }
            #expect(!monitor.isRunning && !attached() && !enabled)
            #expect(budgetCycles == UInt64.max)
            #expect(watching == nil)
            #expect(watchdogThreads(settlingAt: watchdogsBefore) == watchdogsBefore)
            // A stall while no monitor runs: nobody's.
            loop.post { spinForStallTest(milliseconds: 60) }
            loop.runOnce(timeout: .milliseconds(10))

            let again = StallMonitor(loop: loop)
            let ended = Locked<[Stall]>([])
            again.onStallEnded = { stall in ended.withLock { $0.append(stall) } }
            try again.start()
            loop.post { spinForStallTest(milliseconds: 60) }
            loop.runOnce(timeout: .milliseconds(10))
            again.stop()
            #expect(watchdogThreads(settlingAt: watchdogsBefore) == watchdogsBefore)
            let first = reportedToFirst.withLock { $0 }
            #expect(first.isEmpty, "the stopped monitor reported \(first.map(\.durationNanos))")
            return ended.withLock { $0 }
        }
        #expect(stalls.count == 1, "\(stalls.map(\.durationNanos))")
        #expect(stalls.allSatisfy { $0.durationNanos >= 60_000_000 })
    }

    /// How many threads of this process the monitors' watchdogs run on (by their thread name).
    /// With `expected`, waits up to 5 s for the count to reach it: a stopped watchdog has
    /// finished its work when `stop()` returns, but its thread exits a moment later.
    func watchdogThreads(settlingAt expected: Int? = nil) -> Int {
        let giveUp = MainLoop.monotonicNanos() + 5_000_000_000
        while true {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            let count = tasks.filter {
                (try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)) == "stallwatchdog\n"
            }.count
            guard let expected, count != expected, MainLoop.monotonicNanos() < giveUp else { return count }
            usleep(1_000)
        }
    }

    @Test func statisticsEnumsReadAsTheirOldStrings() {
        #expect(StallMonitor.Statistics().watchdogScheduling == .normal)
        #expect(
            [StallMonitor.WatchdogScheduling.realTime, .raisedNice, .shortSlice, .normal].map(\.description) == [
                "SCHED_FIFO 1", "nice -10", "slice 100 us", "normal",
            ])
        #expect(
            StallMonitor.SamplerError.unwinderUnavailable(signal: 38).description
                == "cannot install the sampling signal 38: cannot load libunwind.so.8 or resolve unw_backtrace")
    }

    @Test(.disabled(if: Sanitizer.address, "under ASan the runtime's own _Unwind_RaiseException interceptor wins"))
    func theProcessKeepsItsOwnUnwinder() async throws {
        _ = try await monitored { _, _ in }
        #expect(Sampler.unwinderOwner?.contains("libgcc_s") == true, "\(Sampler.unwinderOwner ?? "nil")")
    }
}

// A process stopped by SIGSTOP (or a debugger) makes the callout it was in look endless: the
// watchdog notices it overslept and flags that stall `suspended` instead of reporting a hang.
@Suite struct MonitorCallbackTests {
    /// `stop()` from `onStallBegan` died in libdispatch with no message (it waited for its own
    /// delivery queue): now it stops the watchdog and returns, and the stall is still delivered
    /// as ended (unfinished) once that callback returns.
    @Test func stopInsideACallbackStopsTheMonitor() async throws {
        let ended = Locked<[Stall]>([])
        let stopped = DispatchSemaphore(value: 0)
        let running = try await onLoopThreadThrowing { loop -> Bool in
            let monitor = StallMonitor(loop: loop)
            monitor.onStallBegan = { _ in
                monitor.stop()
                stopped.signal()
            }
            monitor.onStallEnded = { stall in ended.withLock { $0.append(stall) } }
            try monitor.start()
            loop.post { spinForStallTest(milliseconds: 80) }
            loop.runOnce(timeout: .zero)
            #expect(stopped.wait(timeout: .now() + 20) == .success)
            loop.post { spinForStallTest(milliseconds: 80) }  // not watched any more
            loop.runOnce(timeout: .zero)
            return monitor.isRunning
        }
        #expect(!running)
        // The stopped stall is delivered after the callback that stopped the monitor returned.
        #expect(eventually { ended.withLock { $0.count } == 1 })
    }
}

@Suite struct SuspendedProcessTests {
    /// The test host's `busy` scenario, started with `environment` added, once it said "busy";
    /// its output so far.
    func startBusyHost(environment: [String: String] = [:]) throws -> (Process, Pipe, Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: builtProduct("StallwatchTestHost"))
        process.arguments = ["busy"]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = Pipe()
        try process.run()
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("busy") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        return (process, output, seen)
    }

    @Test func aStallCausedByStoppingTheProcessIsFlaggedSuspended() throws {
        let (process, output, first) = try startBusyHost()
        var seen = first
        for _ in 0..<3 {
            usleep(400_000)
            kill(process.processIdentifier, SIGSTOP)
            usleep(300_000)
            kill(process.processIdentifier, SIGCONT)
        }
        seen.append(output.fileHandleForReading.readDataToEndOfFile())
        process.waitUntilExit()
        let lines = String(decoding: seen, as: UTF8.self).split(separator: "\n").map(String.init)
        let stalls = lines.filter { $0.hasPrefix("stall ") }
        // A stop lands inside a 10 ms callout (they run back to back): that callout looks like a
        // 300 ms hang, and must be flagged suspended. (Short stalls may also come from a busy
        // machine starving the child; those are real and not flagged.) A stop in a callout's
        // last moments can go unseen (the loop finishes it before the watchdog wakes), so the
        // test stops three times and asks for one long stall at least.
        #expect(process.terminationStatus == 0)
        let long = stalls.filter { line in
            line.split(separator: "=").last.flatMap { Int($0) }.map { $0 >= 250 } ?? false
        }
        #expect(!long.isEmpty, "\(lines)")
        #expect(long.allSatisfy { $0.contains("suspended=1") }, "\(stalls)")
    }

    /// A recorded process stopped for 1.5 s in the middle of busy work: that was a severe stall,
    /// a hang rate of thousands of s/h and a failed `gate --max-hangs 0`. The stopped time is
    /// not the app's: left out of stalls, run time and gates, and `report` says how much.
    @Test func theTimeAProcessWasStoppedIsLeftOutOfARecording() throws {
        let path = NSTemporaryDirectory() + "stopped-\(UUID().uuidString).swtrace"
        defer { unlink(path) }
        let (process, output, _) = try startBusyHost(environment: ["STALLWATCH_TRACE": path])
        // A real stop of a real process is the subject: it takes real time. The checks leave
        // 300 ms of the 1.5 s to the writer's 50 ms wake and the scheduler.
        usleep(500_000)
        kill(process.processIdentifier, SIGSTOP)
        usleep(1_500_000)
        kill(process.processIdentifier, SIGCONT)
        _ = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let trace = DecodedTrace(decoding: bytes, fileName: path)
        // The writer wakes every 50 ms: it sees all but the start of the stop.
        #expect(trace.stoppedNanos >= 1_200_000_000, "\(trace.stopped)")
        let long = trace.stalls.filter { StallAccounting.duration($0) >= 250_000_000 }
        #expect(long.isEmpty, "\(long.map { StallAccounting.duration($0) })")
        let gate = try runProduct("stallwatch", ["gate", path, "--max-hangs", "0"])
        #expect(gate.exitCode == 0, "\(gate.output)")
        let report = try runProduct("stallwatch", ["report", path])
        // (One line or two: it wraps at 100 columns when a stall only the stop made long is named.)
        #expect(report.output.contains(" s (SIGSTOP, a debugger),"), "\(report.output)")
        #expect(report.output.contains("left out of run time, stalls and frames"), "\(report.output)")
    }
}
