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
        while isRunning {
            let current = board.snapshot()
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
            let suspended = sleeper.takeOverslept()
            timeStall(
                current, id: nextID, start: start, deadline: deadline, suspended: suspended, sampler: sampler,
                facts: facts,
                sleeper: &sleeper)
            nextID += 1
        }
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
        board.stalledSequence.store(callout.sequence, ordering: .sequentiallyConsistent)
        var stall = Stall(
            id: id, start: start, end: nil, tier: .hitch, callout: identity(of: callout),
            flags: suspended ? [.suspended] : [])
        sampler.beginStall(sequence: callout.sequence)
        defer { sampler.endStall() }
        facts.beginStall(callout.sequence)
        if configuration.watchdogLatenessForTesting > .zero {
            usleep(UInt32(configuration.watchdogLatenessForTesting.nanoseconds / 1000))
        }
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
