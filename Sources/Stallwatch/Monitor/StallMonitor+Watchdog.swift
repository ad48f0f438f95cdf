import CStallwatchShims
import Dispatch
import Glibc

extension StallMonitor {
    /// The watchdog thread's loop: sleep to the running callout's deadline, park while the
    /// loop is idle, and sample a callout still running at its deadline until it ends.
    func watch() {
        _ = sw_set_timer_slack(1_000)
        raiseWatchdogPriority()
        let board = loop.board
        let sampler = ThreadSampler(
            tid: loop.threadID, captureTimeout: configuration.captureTimeout, canCapture: samplerError == nil,
            annotations: loop.annotations, usePerf: configuration.perfSampling,
            sampleInterval: configuration.sampleInterval.nanoseconds,
            own: selfSampler.map { ($0, configuration.selfSamplingPeriod) })
        record { $0.perfSampling = sampler.stacks.perfStatus }
        let facts = SampleFacts(tid: loop.threadID, statements: loop.annotations.statement)
        let budget = configuration.tiers.budget.nanoseconds
        var nextID: UInt64 = 1
        var sleeper = Sleeper(board: board, threshold: configuration.suspendThreshold.nanoseconds)
        // The last callout a stall was made of (timed here, or recovered from the thread's own
        // captures): sequences only grow.
        var handled: UInt64 = 0
        var lateFor: UInt64 = 0
        while isRunning {
            if let own = selfSampler, recoverMissedStall(own, handled: &handled, id: nextID, sleeper: &sleeper) {
                nextID += 1
            }
            let current = board.snapshot()
            if configuration.watchdogLatenessForTesting > .zero, current.isBusy, current.sequence != lateFor {
                // Tests: the watchdog gets no CPU for a while after it sees a callout begin.
                lateFor = current.sequence
                sleepForTesting(configuration.watchdogLatenessForTesting)
                continue
            }
            guard current.isBusy else {
                if board.waiting.load(ordering: .sequentiallyConsistent) {
                    park(board)
                } else {
                    // Between callouts of a busy iteration: look again one budget later.
                    sleeper.sleep(until: sw_monotonic_ns() &+ budget)
                }
                continue
            }
            let timebase = Timebase.shared
            timebase.refresh()
            let start = timebase.nanos(current.startCycles)
            let deadline = start &+ budget
            if sw_monotonic_ns() < deadline {
                facts.sawCallout(current.sequence)
                sleeper.sleep(until: deadline)
                continue
            }
            // Still the same callout at its deadline: a stall.
            handled = current.sequence
            let suspended = sleeper.takeOverslept()
            timeStall(
                current, id: nextID, start: start, deadline: deadline, suspended: suspended, sampler: sampler,
                facts: facts,
                sleeper: &sleeper)
            nextID += 1
        }
    }

    /// A stall the loop thread's own handler declared and that ended before the watchdog looked
    /// (it did not get a CPU while the stall lasted): made from the thread's own captures, with
    /// the exact end the loop stamped. Returns whether there was one.
    private func recoverMissedStall(
        _ own: SelfSampler, handled: inout UInt64, id: UInt64, sleeper: inout Sleeper
    ) -> Bool {
        let board = loop.board
        let ended = board.stallEndSequence.load(ordering: .acquiring)
        guard ended > handled else { return false }
        handled = ended
        let captures = own.takeAll(sequence: ended)
        guard let first = captures.first else { return false }
        let endCycles = board.stallEndCycles.load(ordering: .relaxed)
        // Another stall's end stamped meanwhile (they are a budget apart at least): no exact end.
        let exact = board.stallEndSequence.load(ordering: .acquiring) == ended
        let timebase = Timebase.shared
        timebase.refresh()
        let start = timebase.nanos(first.callout.startCycles)
        // The watchdog was stopped with the process (SIGSTOP) while this stall ran: so was the
        // stall it missed.
        let stallEnd = start &+ timebase.duration(from: first.callout.startCycles, to: endCycles)
        let suspended = sleeper.overslept(during: start...max(start, exact ? stallEnd : captures.last!.time))
        var stall = Stall(
            id: id, start: start, end: nil, tier: .hitch, callout: identity(of: first.callout),
            flags: suspended ? [.suspended] : [])
        stall.samples = captures.map { $0.sample() }
        let deadline = start &+ configuration.tiers.budget.nanoseconds
        record { stats in
            stats.stalls += 1
            stats.missedByWatchdog += 1
            if suspended { stats.suspendedStalls += 1 }
            stats.detectionLatencyNanos.appendBounded(first.time > deadline ? first.time - deadline : 0)
            stats.selfSamples += captures.count
            stats.stackSources[.signal, default: 0] += captures.count
            for captured in captures { stats.selfCaptureNanos.appendBounded(captured.unwindNanos) }
        }
        var began = stall
        began.samples = [stall.samples[0]]
        began.flags.insert(.unfinished)
        deliver(began, began: true)
        stall.end = exact ? stallEnd : captures.last!.time
        if let duration = stall.duration { stall.tier = configuration.tiers.tier(for: duration) ?? .hitch }
        deliver(stall, began: false)
        return true
    }

    /// A watchdog that does not get a CPU until the stall is over misses it, and on a busy
    /// machine the stalled app itself keeps the CPUs busy. Where allowed (root or
    /// CAP_SYS_NICE), the watchdog runs SCHED_FIFO priority 1 — it only ever sleeps or
    /// samples, so it cannot hog a CPU, and the kernel's RT throttling bounds it anyway —
    /// else with nice -10, else as it is. `watchdogScheduling` says which.
    private func raiseWatchdogPriority() {
        let scheduling = WatchdogScheduling.raiseCurrentThread()
        record { $0.watchdogScheduling = scheduling }
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
        sampler: ThreadSampler, facts: SampleFacts,
        sleeper: inout Sleeper
    ) {
        let board = loop.board
        board.declareStall(callout.sequence)
        var stall = Stall(
            id: id, start: start, end: nil, tier: .hitch, callout: identity(of: callout),
            flags: suspended ? [.suspended] : [])
        sampler.beginStall(sequence: callout.sequence)
        defer { sampler.endStall() }
        facts.beginStall(callout.sequence)
        stall.samples.append(facts.sample { sample(sampler) })
        let firstSample = stall.samples[0].time
        record { stats in
            stats.stalls += 1
            stats.detectionLatencyNanos.appendBounded(firstSample > deadline ? firstSample - deadline : 0)
        }
        var began = stall
        began.flags.insert(.unfinished)
        deliver(began, began: true)

        while true {
            let elapsed = sw_monotonic_ns() &- start
            sampler.follow(interval: sampleInterval(after: elapsed))
            sleeper.sleep(until: stall.samples.last!.time &+ sampleInterval(after: elapsed))
            if sleeper.takeOverslept() { stall.flags.insert(.suspended) }
            if board.sequence != callout.sequence {
                let exact = board.stallEndSequence.load(ordering: .acquiring) == callout.sequence
                // Exact: both ends are the loop's own cycle stamps, so the duration carries no
                // conversion error beyond the rate's.
                let end = board.stallEndCycles.load(ordering: .relaxed)
                stall.end =
                    exact ? start &+ Timebase.shared.duration(from: callout.startCycles, to: end) : sw_monotonic_ns()
                break
            }
            if !isRunning {
                stall.flags.insert(.unfinished)
                break
            }
            if stall.samples.count < configuration.maxSamplesPerStall {
                stall.samples.append(facts.sample { sample(sampler) })
            }
        }
        if let duration = stall.duration {
            stall.tier = configuration.tiers.tier(for: duration) ?? .hitch
        }
        if stall.samples.contains(where: \.captureTimedOut) { stall.flags.insert(.captureTimedOut) }
        if stall.flags.contains(.suspended) { record { $0.suspendedStalls += 1 } }
        deliver(stall, began: false)
    }

    /// 5 ms by default; ×4 after 250 ms and ×20 after 1 s, so a long hang keeps a bounded
    /// number of samples spread over its whole length.
    private func sampleInterval(after elapsed: UInt64) -> UInt64 {
        let base = configuration.sampleInterval.nanoseconds
        if elapsed > 1_000_000_000 { return base * 20 }
        if elapsed > 250_000_000 { return base * 4 }
        return base
    }

    /// One sample of the loop thread (`ThreadSampler`, shared with `HeartbeatMonitor`).
    private func sample(_ sampler: ThreadSampler) -> Sample {
        sampler.sample(record: record)
    }

    private func identity(of callout: CalloutSnapshot) -> CalloutIdentity {
        CalloutIdentity(
            kind: callout.kind, label: CalloutSite.unpack(callout.label), file: CalloutSite.unpack(callout.file) ?? "?",
            line: callout.line, mode: callout.mode.name, phase: callout.phase)
    }
}

/// The watchdog's timed sleep: wakes early when the loop signals (a stalled callout ended,
/// or `stop()`), and notices when it overslept (the process was stopped).
struct Sleeper {
    let board: CalloutBoard
    let threshold: UInt64
    private var overslept = false
    /// The last oversleep: from the deadline to the wake-up (the process was stopped then).
    private var lastOversleep: ClosedRange<UInt64>?

    init(board: CalloutBoard, threshold: UInt64) {
        self.board = board
        self.threshold = threshold
    }

    mutating func sleep(until deadline: UInt64) {
        let now = sw_monotonic_ns()
        guard deadline > now else {
            overslept = false
            return
        }
        _ = board.watchdogWake.wait(timeout: .now() + .nanoseconds(Int(deadline - now)))
        // Only the latest sleep counts: an old oversleep must not mark a later, real stall.
        let woke = sw_monotonic_ns()
        overslept = woke > deadline && woke - deadline > threshold
        if overslept { lastOversleep = deadline...woke }
    }

    /// Whether the last oversleep overlapped `interval` (a stall recorded after the fact was
    /// stopped with the process, whatever the watchdog slept through since).
    func overslept(during interval: ClosedRange<UInt64>) -> Bool {
        lastOversleep?.overlaps(interval) ?? false
    }

    /// Whether a sleep overslept since the last call (and forgets it).
    mutating func takeOverslept() -> Bool {
        defer { overslept = false }
        return overslept
    }
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
    let until = sw_monotonic_ns() &+ duration.nanoseconds
    while sw_monotonic_ns() < until { usleep(UInt32(max(1, (until &- sw_monotonic_ns()) / 1000))) }
}
