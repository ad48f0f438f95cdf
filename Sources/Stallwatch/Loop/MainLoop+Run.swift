import CStallwatchShims
import Glibc
import StallwatchCore

extension MainLoop {
    /// Why a run returned.
    public enum RunResult: Sendable, Equatable {
        /// The mode has nothing that could ever run: no timers, no sources, no posts.
        case finished
        /// `stop()` was called.
        case stopped
        /// The deadline or timeout passed.
        case timedOut
        /// Work ran (returned by `runOnce`).
        case handledWork
    }

    /// Runs the loop in the default mode until `stop()` is called. Loop thread only.
    public func run() {
        // The default mode services posts, so it is never "finished": this returns on stop().
        run(mode: .default)
    }

    /// Runs the loop in `mode` until `stop()`, the deadline, or nothing is left to run in the
    /// mode. May be called from inside a callout (a nested, modal-style run). Loop thread only.
    @discardableResult
    public func run(mode: Mode, until deadline: ContinuousClock.Instant? = nil) -> RunResult {
        run(mode, deadline: monotonicDeadline(deadline), returnAfterWork: false)
    }

    /// Runs at most one iteration that does work: waits up to `timeout` (zero: just poll) for
    /// something to run, runs what is ready, and says why it returned. Loop thread only.
    @discardableResult
    public func runOnce(mode: Mode = .default, timeout: Duration? = nil) -> RunResult {
        let deadline = timeout.map { sw_monotonic_ns().saturatingAdding($0.nanoseconds) } ?? UInt64.max
        return run(mode, deadline: deadline, returnAfterWork: true)
    }

    func monotonicDeadline(_ deadline: ContinuousClock.Instant?) -> UInt64 {
        guard let deadline else { return UInt64.max }
        return sw_monotonic_ns().saturatingAdding(ContinuousClock.now.duration(to: deadline).nanoseconds)
    }

    func run(_ mode: Mode, deadline: UInt64, returnAfterWork: Bool) -> RunResult {
        require(isCurrent, "MainLoop.run must be called on the loop's thread")
        let state = self.state(for: mode)
        if !preparedThread { prepareThread() }
        let outerMode = currentMode
        currentMode = mode
        runDepth += 1
        if eventBuffers.count < runDepth {
            eventBuffers.append(Epoll.EventBuffer(capacity: Self.eventCapacity))
        }
        let outer = suspendOuterCallout()
        notify(.entry, state)
        let result = iterate(state, deadline: deadline, returnAfterWork: returnAfterWork)
        notify(.exit, state)
        runDepth -= 1
        currentMode = outerMode
        resumeOuterCallout(outer)
        return result
    }

    /// Once, on the loop thread before its first run.
    func prepareThread() {
        preparedThread = true
        // Timers are the loop's only clock: let the kernel end timed waits on time (1 µs
        // slack instead of 50 µs) so frame ticks and timers are not late by design.
        _ = sw_set_timer_slack(1_000)
        // Threads made by libdispatch or test runners block real-time signals: let the
        // sampler's through (and prime libunwind on this thread) if a monitor installed it.
        if Sampler.isInstalled { Sampler.prepareCurrentThread() }
        annotations.bindToCurrentThread()
        if isMain {
            checkMainActor()
            TraceRecorder.startFromEnvironment(loop: self)
        }
    }

    /// The loop proper; the phases of one iteration are documented in docs/run-loop.md.
    func iterate(_ state: ModeState, deadline: UInt64, returnAfterWork: Bool) -> RunResult {
        let events = eventBuffers[runDepth - 1]
        while true {
            // 1. Stop requests end the innermost run at an iteration boundary.
            if stopRequested.exchange(false, ordering: .sequentiallyConsistent) { return .stopped }
            // 2. A mode with nothing in it can never do anything.
            if state.isEmpty { return .finished }
            var didWork = false
            // 3. Timers due now, earliest first.
            notify(.beforeTimers, state)
            if fireTimers(state, now: sw_monotonic_ns()) { didWork = true }
            // 4. Posted closures (common modes only), a bounded batch.
            notify(.beforeSources, state)
            if state.servicesPosts && runPosts(state) { didWork = true }
            // 5. Poll (after work) or wait (idle) for descriptors, the wake-up eventfd and the
            //    libdispatch main queue, until the next timer or the deadline.
            let blocking = !didWork && !hasPendingWork(state)
            if blocking { notify(.beforeWaiting, state) }
            finishIteration()
            let timeout = blocking ? waitTimeout(state, deadline: deadline) : 0
            let count = state.epoll.wait(into: events, timeoutNanos: timeout)
            sleeping.store(false, ordering: .relaxed)
            if blocking { board.loopWoke() }
            if blocking { notify(.afterWaiting, state) }
            // 6. Ready descriptors and the main queue.
            for index in 0..<count {
                let (tag, ready) = events[index]
                if dispatch(tag, ready, in: state) { didWork = true }
            }
            // 7. Return or go round.
            if returnAfterWork && didWork { return .handledWork }
            if deadline != UInt64.max && sw_monotonic_ns() >= deadline { return .timedOut }
        }
    }

    @inline(__always)
    func hasPendingWork(_ state: ModeState) -> Bool {
        (state.servicesPosts && (local.pointee.count > 0 || remote.count.load(ordering: .relaxed) > 0))
            || stopRequested.load(ordering: .relaxed)
    }

    /// Announces the wait and computes its timeout: -1 forever, 0 if work arrived meanwhile.
    func waitTimeout(_ state: ModeState, deadline: UInt64) -> Int64 {
        board.waiting.store(true, ordering: .sequentiallyConsistent)
        sleeping.store(true, ordering: .sequentiallyConsistent)
        // Checked after `sleeping` is visible: see `wakeIfWaiting`.
        if state.servicesPosts && remote.count.load(ordering: .sequentiallyConsistent) > 0 { return 0 }
        if local.pointee.count > 0 && state.servicesPosts { return 0 }
        if stopRequested.load(ordering: .sequentiallyConsistent) { return 0 }
        let wake = min(nextTimerWake(state) ?? UInt64.max, deadline)
        if wake == UInt64.max { return -1 }
        let now = sw_monotonic_ns()
        return wake <= now ? 0 : Int64(clamping: wake - now)
    }

    /// Runs queued closures, including ones they post, up to `postsPerIteration`.
    func runPosts(_ state: ModeState) -> Bool {
        remote.drain(into: local, spare: &spareJobs)
        var ran = 0
        while ran < Self.postsPerIteration, let job = local.pointee.popFirst() {
            ran += 1
            callout(job.site, phase: .beforeSources, mode: state.mode, job.body)
        }
        return ran > 0
    }
}
