import CStallwatchShims
import Dispatch
import Glibc
import StallwatchCore

extension StallMonitor {
    /// The watchdog thread's loop: sleep to the running callout's deadline, park while the
    /// loop is idle, sample a callout still running at its deadline until it ends, and record
    /// the overruns the loop logged that it did not time (it got no CPU while they lasted).
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
        var nextID: UInt64 = 1
        var sleeper = Sleeper(board: board, threshold: configuration.suspendThreshold.nanoseconds)
        var cursor = cursor
        // The callout this watchdog timed last: the loop logs it too, as it ended.
        var timed: UInt64 = 0
        var lateFor: UInt64 = 0
        armed.signal()
        while isRunning {
            recordOverruns(from: &cursor, except: timed, since: since, nextID: &nextID, sleeper: &sleeper)
            let current = board.snapshot()
            if configuration.watchdogLatenessForTesting > .zero, current.isBusy, current.sequence != lateFor {
                // Tests: the watchdog gets no CPU for a while after it sees a callout begin.
                lateFor = current.sequence
                sleepForTesting(configuration.watchdogLatenessForTesting)
                sleeper.forgetGap()
                continue
            }
            guard current.isBusy, current.startCycles >= since else {
                if board.waiting.load(ordering: .sequentiallyConsistent) {
                    park(board)
                    sleeper.forgetGap()  // an idle wait has no deadline to be late for
                } else {
                    // Between callouts of a busy iteration: look again one budget later.
                    sleeper.sleep(until: sw_monotonic_ns().saturatingAdding(budget))
                }
                continue
            }
            let timebase = Timebase.shared
            timebase.refresh()
            // The loop judges each callout against the budget in cycles: keep it at the best rate.
            board.budgetCycles.store(timebase.cycles(budget), ordering: .relaxed)
            let start = timebase.nanos(current.startCycles)
            let deadline = start.saturatingAdding(budget)
            if sleeper.look() < deadline {
                sampler.sawCallout(current.sequence)
                sleeper.sleep(until: deadline)
                continue
            }
            // Still the same callout at its deadline: a stall. Declared first, then checked: a
            // callout that ended meanwhile is the loop's to log (if its own stamps overran).
            board.declareStall(current.sequence)
            guard board.sequence == current.sequence else { continue }
            timed = current.sequence
            let suspended = sleeper.overslept(during: start...sleeper.look())
            timeStall(
                current, id: nextID, start: start, deadline: deadline, suspended: suspended, sampler: sampler,
                overruns: cursor, sleeper: &sleeper)
            nextID += 1
        }
        // Stopped: the overruns that ended before stop() are stalls still to be recorded.
        recordOverruns(from: &cursor, except: timed, since: since, nextID: &nextID, sleeper: &sleeper)
    }

    /// The overruns the loop logged since `cursor` that the watchdog did not time (`timed`): it
    /// was not scheduled while they lasted, or not yet started. Each becomes a stall with the
    /// loop's exact start and end, and with the loop thread's own captures of it as its samples
    /// (none for a callout that never ran user code past its budget: a sleep, a lock wait).
    private func recordOverruns(
        from cursor: inout UInt64, except timed: UInt64, since: UInt64, nextID: inout UInt64, sleeper: inout Sleeper
    ) {
        let (entries, lost) = loop.board.overruns.read(from: &cursor)
        if lost > 0 { core.record { $0.lostOverruns += Int(lost) } }
        for entry in entries where entry.sequence != timed && entry.startCycles >= since {
            recordOverrun(entry, id: nextID, sleeper: &sleeper)
            nextID += 1
        }
    }

    private func recordOverrun(_ entry: OverrunLog.Entry, id: UInt64, sleeper: inout Sleeper) {
        let captures = selfSampler?.takeAll(sequence: entry.sequence) ?? []
        let timebase = Timebase.shared
        timebase.refresh()
        let start = timebase.nanos(entry.startCycles)
        let end = start &+ timebase.duration(from: entry.startCycles, to: entry.endCycles)
        // The watchdog was stopped with the process (SIGSTOP) while this stall ran: so was the
        // stall it missed.
        _ = sleeper.look()
        let suspended = sleeper.overslept(during: start...max(start, end))
        let callout = CalloutSnapshot(
            sequence: entry.sequence, startCycles: entry.startCycles, kind: entry.callout.descriptor.kind,
            phase: entry.callout.descriptor.phase, mode: entry.callout.descriptor.mode,
            line: entry.callout.descriptor.line, label: entry.callout.label, file: entry.callout.file)
        let stall = Stall(
            id: id, start: start, end: nil, tier: .hitch, callout: identity(of: callout),
            flags: suspended ? [.suspended] : [], context: AppState.current)
        let deadline = start.saturatingAdding(configuration.tiers.budget.nanoseconds)
        core.deliverMissed(stall, captures: captures, deadline: deadline, end: end)
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

    private func timeStall(
        _ callout: CalloutSnapshot, id: UInt64, start: UInt64, deadline: UInt64, suspended: Bool,
        sampler: ThreadSampler, overruns cursor: UInt64, sleeper: inout Sleeper
    ) {
        let board = loop.board
        board.declareStall(callout.sequence)
        var stall = Stall(
            id: id, start: start, end: nil, tier: .hitch, callout: identity(of: callout),
            flags: suspended ? [.suspended] : [], context: AppState.current)
        sampler.beginStall(sequence: callout.sequence)
        defer {
            sampler.endStall()
        }
        // Detected now (or at the thread's own earlier capture); the first sample may wait a
        // little for the thread's own stack, which then carries its own, later time.
        let looked = sw_monotonic_ns()
        var scopes = ExpectedScopeTally()
        stall.samples.append(sample(sampler, &sleeper))
        scopes.note(sampler, &stall)
        core.recordDetection(at: min(looked, stall.samples[0].time), deadline: deadline)
        core.deliverBegan(stall)
        var progressed = stall.samples[0].time

        while true {
            let elapsed = sw_monotonic_ns() &- start
            let interval = configuration.common.sampleInterval(after: elapsed)
            sampler.follow(interval: interval)
            sleeper.sleep(until: stall.samples.last!.time &+ interval)
            if board.sequence != callout.sequence {
                // Exact: both ends are the loop's own cycle stamps, so the duration carries no
                // conversion error beyond the rate's. The end on the board is this callout's
                // unless a later callout overran too before the watchdog looked (a loaded
                // machine): then it is in the loop's overrun log, which the watchdog has not
                // read past this callout (`cursor`). Only if the log lapped is the end "now".
                if configuration.watchdogLatenessAtStallEndForTesting > .zero {
                    sleepForTesting(configuration.watchdogLatenessAtStallEndForTesting)
                    sleeper.forgetGap()
                }
                var end: UInt64?
                if board.stallEndSequence.load(ordering: .acquiring) == callout.sequence {
                    end = board.stallEndCycles.load(ordering: .relaxed)
                } else {
                    var peek = cursor
                    end = board.overruns.read(from: &peek).entries.last { $0.sequence == callout.sequence }?.endCycles
                }
                stall.end =
                    end.map { start &+ Timebase.shared.duration(from: callout.startCycles, to: $0) }
                    ?? sw_monotonic_ns()
                break
            }
            if !isRunning {
                stall.flags.insert(.unfinished)
                break
            }
            if stall.samples.count < configuration.maxSamplesPerStall {
                stall.samples.append(sample(sampler, &sleeper))
                scopes.note(sampler, &stall)
                if stall.samples.last!.time &- progressed >= stallProgressInterval {
                    progressed = stall.samples.last!.time
                    core.deliverProgress(stall)
                }
            }
        }
        // A gap the watchdog saw (a sleep far past its deadline, a sample's wait, a stretch
        // awake) that overlaps the stall: the process was stopped during it.
        let now = sleeper.look()
        if sleeper.overslept(during: start...max(start, stall.end ?? now)) {
            stall.flags.insert(.suspended)
        }
        scopes.settle(&stall, budget: configuration.tiers.budget.nanoseconds)
        core.deliverEnded(stall)
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
