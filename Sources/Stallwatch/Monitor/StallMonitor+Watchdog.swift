import CStallwatchShims
import Dispatch
import Glibc
import StallwatchCore

extension StallMonitor {
    /// What the watchdog keeps between looks at the loop's board.
    struct BoardWatch {
        var detector: WorkItemDetector
        /// Where the watchdog stands in the loop's overrun log.
        var cursor: UInt64
        var sleeper: Sleeper
        var nextID: UInt64 = 1
        /// The stall in progress, and how much of it ran inside an `expectLong` scope.
        var stall: Stall?
        var scopes = ExpectedScopeTally()
        /// When the stall in progress was last handed to the listeners (`deliverProgress`).
        var progressed: UInt64 = 0
        /// The running callout as the last look read it (a stall's identity).
        var current: CalloutSnapshot?
        /// The overruns the last look read, with their callouts (a missed stall's identity).
        var logged: [OverrunLog.Entry] = []
        /// Tests: the callout after which the watchdog last lost the CPU on purpose.
        var lateFor: UInt64 = 0
    }

    /// The watchdog thread's loop. Each look reads the loop's board — the running callout, then
    /// the overruns the loop logged — into the item detector (`WorkItemDetector`, which every
    /// source of exact item boundaries drives) and carries out its actions: a callout still
    /// running at its deadline is a stall, sampled until it ends at the loop's own end stamp;
    /// one that overran while the watchdog got no CPU is a stall found after the fact. Between
    /// looks it sleeps to the detector's next deadline, or parks while the loop is idle.
    /// `overruns` is where the loop's overrun log stood when `start()` enabled the board, `since`
    /// the cycle stamp from which callouts are this monitor's (one running at `start()` is not);
    /// `armed` is signalled once the watchdog is ready to time a stall.
    func watch(overruns cursor: UInt64, since: UInt64, armed: DispatchSemaphore) {
        _ = sw_set_timer_slack(1_000)
        core.raiseWatchdogPriority()
        let board = loop.board
        let sampler = ThreadSampler(
            tid: loop.threadID, configuration: configuration.common, canCapture: samplerError == nil,
            annotations: loop.annotations, usePerf: configuration.perfSampling, own: selfSampler,
            faultAddresses: configuration.perfSampling)
        core.recordCommon { $0.perfSampling = sampler.stacks.perfStatus }
        let budget = configuration.tiers.budget.nanoseconds
        let common = configuration.common
        var watch = BoardWatch(
            detector: WorkItemDetector(budget: budget) { common.sampleInterval(after: $0) }, cursor: cursor,
            sleeper: Sleeper(board: board, threshold: configuration.suspendThreshold.nanoseconds))
        armed.signal()
        while isRunning {
            guard let look = look(&watch, since: since) else { continue }
            let now = watch.sleeper.look()
            guard carryOut(watch.detector.look(look, now: now), &watch, sampler: sampler, now: now) else { continue }
            if let wakeAt = watch.detector.wakeAt {
                if watch.stall == nil { sampler.sawCallout(look.sequence) }
                watch.sleeper.sleep(until: wakeAt)
            } else if board.waiting.load(ordering: .sequentiallyConsistent) {
                park(board)
                watch.sleeper.forgetGap()  // an idle wait has no deadline to be late for
            } else {
                // Between callouts of a busy iteration: look again one budget later.
                watch.sleeper.sleep(until: now.saturatingAdding(budget))
            }
        }
        // Stopped: a stall that ended since the last look ends exactly, the overruns logged
        // before stop() are stalls still to be recorded, and a stall still running is unfinished.
        let look = look(&watch, since: since, testing: false)!
        let now = watch.sleeper.look()
        _ = carryOut(watch.detector.look(look, now: now), &watch, sampler: sampler, now: now)
        if var stall = watch.stall {
            stall.flags.insert(.unfinished)
            watch.scopes.settle(&stall, budget: budget)
            sampler.endStall()
            core.deliverEnded(stall)
        }
    }

    /// What the board shows: the running callout first, then the log (a callout's overrun is
    /// logged before its sequence moves on, so a finished stall's end is always read). A callout
    /// that began before `since` shows as none. Nil when a test's lateness hook slept instead.
    private func look(_ watch: inout BoardWatch, since: UInt64, testing: Bool = true) -> WorkItemDetector.Look? {
        let board = loop.board
        let current = board.snapshot()
        if testing, configuration.watchdogLatenessForTesting > .zero, current.isBusy,
            current.sequence != watch.lateFor
        {
            // Tests: the watchdog gets no CPU for a while after it sees a callout begin.
            watch.lateFor = current.sequence
            sleepForTesting(configuration.watchdogLatenessForTesting)
            watch.sleeper.forgetGap()
            return nil
        }
        if testing, configuration.watchdogLatenessAtStallEndForTesting > .zero,
            let stalled = watch.detector.stalled, current.sequence != stalled.sequence
        {
            // Tests: the watchdog gets no CPU between a stall's end and reading the log.
            sleepForTesting(configuration.watchdogLatenessAtStallEndForTesting)
            watch.sleeper.forgetGap()
        }
        let timebase = Timebase.shared
        timebase.refresh()
        if current.isBusy {
            // The loop judges each callout against the budget in cycles: keep it at the best rate.
            board.budgetCycles.store(timebase.cycles(configuration.tiers.budget.nanoseconds), ordering: .relaxed)
        }
        let ours = current.isBusy && current.startCycles >= since
        watch.current = current
        var look = WorkItemDetector.Look(
            sequence: ours || !current.isBusy ? current.sequence : current.sequence &- 1,
            start: timebase.nanos(current.startCycles))
        let (entries, lost) = board.overruns.read(from: &watch.cursor)
        if lost > 0 { core.record { $0.lostOverruns += Int(lost) } }
        watch.logged = entries.filter { $0.startCycles >= since }
        for entry in watch.logged {
            let start = timebase.nanos(entry.startCycles)
            look.overruns.append(
                .init(
                    sequence: entry.sequence, start: start,
                    end: start &+ timebase.duration(from: entry.startCycles, to: entry.endCycles)))
        }
        return look
    }

    /// Carries out the detector's actions at `now`. False when a stall it began could not be
    /// declared (its callout ended first): look again at once, the log has it.
    private func carryOut(
        _ actions: [WorkItemDetector.Action], _ watch: inout BoardWatch, sampler: ThreadSampler, now: UInt64
    ) -> Bool {
        let budget = configuration.tiers.budget.nanoseconds
        for action in actions {
            switch action {
            case .began(let sequence, let start):
                // Declared first, then checked: a callout that ended meanwhile is the loop's to
                // log (whatever its length, once declared) and a missed stall at the next look.
                loop.board.declareStall(sequence)
                guard loop.board.sequence == sequence, let current = watch.current else {
                    watch.detector.withdraw()
                    return false
                }
                watch.stall = Stall(
                    id: watch.nextID, start: start, end: nil, tier: .hitch, callout: identity(of: current),
                    flags: watch.sleeper.overslept(during: start...max(start, now)) ? [.suspended] : [],
                    context: AppState.current)
                watch.nextID += 1
                watch.scopes = ExpectedScopeTally(scopes: sampler.annotations)
                sampler.beginStall(sequence: sequence)
            case .sample:
                guard var stall = watch.stall, stall.samples.count < configuration.maxSamplesPerStall else { break }
                stall.samples.append(sample(sampler, &watch.sleeper))
                watch.scopes.note(sampler, &stall)
                sampler.follow(interval: configuration.common.sampleInterval(after: now &- stall.start))
                core.deliverSampled(
                    stall, first: stall.samples.count == 1, progressed: &watch.progressed, looked: now, budget: budget)
                watch.stall = stall
            case .ended(_, _, let end, _):
                guard var stall = watch.stall else { break }
                // Exact: both ends are the loop's own cycle stamps, from its log.
                stall.end = end
                // A gap the watchdog saw (a sleep far past its deadline, a sample's wait, a
                // stretch awake) that overlaps the stall: the process was stopped during it.
                if watch.sleeper.overslept(during: stall.start...max(stall.start, end)) {
                    stall.flags.insert(.suspended)
                }
                watch.scopes.settle(&stall, budget: budget)
                sampler.endStall()
                watch.stall = nil
                core.deliverEnded(stall)
            case .abandoned:
                break  // the board never goes away while its monitor runs
            case .missed(let overrun):
                guard let entry = watch.logged.last(where: { $0.sequence == overrun.sequence }) else { break }
                recordOverrun(entry, overrun, id: watch.nextID, sleeper: &watch.sleeper)
                watch.nextID += 1
            }
        }
        return true
    }

    /// A callout that overran while the watchdog was not looking (it got no CPU, or was not yet
    /// started): a stall with the loop's exact start and end, and with the loop thread's own
    /// captures of it as its samples (none for a callout that never ran user code past its
    /// budget: a sleep, a lock wait).
    private func recordOverrun(
        _ entry: OverrunLog.Entry, _ overrun: WorkItemDetector.Overrun, id: UInt64, sleeper: inout Sleeper
    ) {
        let deadline = overrun.start.saturatingAdding(configuration.tiers.budget.nanoseconds)
        let captures = selfSampler?.takeAll(sequence: entry.sequence, after: deadline) ?? []
        // The watchdog was stopped with the process (SIGSTOP, a debugger) while this stall ran:
        // so was the stall it missed.
        sleeper.look()
        let suspended = sleeper.overslept(during: overrun.start...max(overrun.start, overrun.end))
        let callout = CalloutSnapshot(
            sequence: entry.sequence, startCycles: entry.startCycles, kind: entry.callout.descriptor.kind,
            phase: entry.callout.descriptor.phase, mode: entry.callout.descriptor.mode,
            line: entry.callout.descriptor.line, label: entry.callout.label, file: entry.callout.file)
        let stall = Stall(
            id: id, start: overrun.start, end: nil, tier: .hitch, callout: identity(of: callout),
            flags: suspended ? [.suspended] : [], context: AppState.current)
        core.deliverMissed(stall, captures: captures, deadline: deadline, end: overrun.end)
    }

    /// Sleeps until the loop leaves its idle wait (no timer: an idle loop costs no wake-ups).
    private func park(_ board: CalloutBoard) {
        board.parked.store(true, ordering: .sequentiallyConsistent)
        if board.waiting.load(ordering: .sequentiallyConsistent) {
            board.watchdogWake.wait()
        } else if !board.parked.exchange(false, ordering: .sequentiallyConsistent) {
            board.watchdogWake.wait()  // the loop took the flag: its signal is on the way
        }
    }

    /// One sample of the loop thread (`ThreadSampler`, shared with `HeartbeatMonitor`); a stop of
    /// the process while it waited is noted as the sleeper's oversleep.
    private func sample(_ sampler: ThreadSampler, _ sleeper: inout Sleeper) -> Sample {
        _ = sleeper.look()
        let sample = sampler.sample(record: core.recordCommon)
        if let stopped = sampler.takeStoppedGap() {
            sleeper.noteOversleep(stopped)
            sleeper.forgetGap()
        } else {
            // A capture may wait up to its timeout for the thread's own stack: that is not a gap.
            _ = sleeper.look(allowing: configuration.captureTimeout.nanoseconds)
        }
        return sample
    }

    private func identity(of callout: CalloutSnapshot) -> CalloutIdentity {
        CalloutIdentity(
            kind: callout.kind, label: CalloutSite.unpack(callout.label), file: CalloutSite.unpack(callout.file) ?? "?",
            line: callout.line, mode: callout.mode.name, phase: callout.phase)
    }
}

/// The watchdog's timed sleep: wakes early when the loop signals (a stalled callout ended,
/// or `stop()`), and notices when it overslept (the process was stopped).
/// The watchdog's clock readings, and what their gaps say: a reading far later than the
/// previous one (or than the deadline of the sleep between them) means the watchdog ran no code
/// meanwhile — the process was stopped (SIGSTOP, a debugger), and a stall across that gap is
/// flagged `suspended`. A stop can land while the watchdog sleeps or while it is awake between
/// readings; every reading checks the gap since the previous one, so both are seen.
struct Sleeper {
    let board: CalloutBoard
    let threshold: UInt64
    /// The last gap: from the time the watchdog was due to run to the reading after it.
    private var lastOversleep: ClosedRange<UInt64>?
    /// The last time the watchdog was known to run (its latest reading), or due to (a sleep's
    /// deadline); nil after an untimed wait.
    private var due: UInt64?

    init(board: CalloutBoard, threshold: UInt64) {
        self.board = board
        self.threshold = threshold
    }

    /// The monotonic clock now, noting a gap beyond the threshold (and `extra`, for a step that
    /// may legitimately take that long) since the watchdog was last due to run.
    @discardableResult
    mutating func look(allowing extra: UInt64 = 0) -> UInt64 {
        let now = sw_monotonic_ns()
        if let due, now > due, now - due > threshold &+ extra {
            lastOversleep = due...now
        }
        due = now
        return now
    }

    mutating func sleep(until deadline: UInt64) {
        let now = look()
        guard deadline > now else { return }
        _ = board.watchdogWake.wait(timeout: .now() + .nanoseconds(Int(clamping: deadline - now)))
        // Woken early (signalled) or on time: due at whichever came first.
        due = min(deadline, sw_monotonic_ns())
        look()
    }

    /// The watchdog did not mean to run meanwhile (an untimed wait, a test's injected lateness).
    mutating func forgetGap() { due = nil }

    /// Whether the last gap overlapped `interval` (a stall recorded after the fact was stopped
    /// with the process, whatever the watchdog slept through since).
    func overslept(during interval: ClosedRange<UInt64>) -> Bool {
        lastOversleep?.overlaps(interval) ?? false
    }

    /// The process was stopped from `gap`'s start to its end while the watchdog was awake.
    mutating func noteOversleep(_ gap: ClosedRange<UInt64>) { lastOversleep = gap }
}

extension Array where Element == UInt64 {
    /// Appends, keeping at most the last 4096 values.
    mutating func appendBounded(_ value: UInt64) {
        if count >= 4096 { removeFirst(count - 4095) }
        append(value)
    }
}

/// Sleeps `duration` whole, whatever signals arrive meanwhile (tests' lateness hooks).
func sleepForTesting(_ duration: Duration) {
    let until = sw_monotonic_ns().saturatingAdding(duration.nanoseconds)
    while sw_monotonic_ns() < until { usleep(UInt32(max(1, (until &- sw_monotonic_ns()) / 1000))) }
}
