import CStallwatchSampler
import CStallwatchShims
import Dispatch
import Glibc
import StallwatchCore

extension HeartbeatMonitor {
    /// What the watchdog keeps per executor: its thread's probes and the stall in progress.
    struct Watch {
        let executor: HeartbeatMonitor.Executor
        /// When a stall of the executor begins, is sampled and ends: its heartbeat in flight is
        /// the item (`heartbeatLook`), or its loop's iteration, item or job (`stepLoop`).
        var detector: WorkItemDetector
        /// The pool's state (`watchConcurrencyPool`); nil for a serial executor.
        var pool: PoolWatch?
        var tid: Int32 = 0
        /// The thread that ran the executor's last heartbeat, as last seen.
        var heartbeatTid: Int32 = 0
        var probe: IdleProbe?
        var sampler: ThreadSampler?
        /// The thread's own ticks (`configuration.selfSampling`), for the current tid.
        var own: SelfSampler?
        var stall: Stall?
        /// How much of the stall ran inside an `expectLong` scope.
        var scopes = ExpectedScopeTally()
        /// When the stall in progress was last handed to the listeners (`deliverSampled`); 0
        /// until its first look.
        var progressed: UInt64 = 0
        /// The stall's heartbeat ran: its run number, and until when to wait for the tick that
        /// ran it (an executor that reports its ticks reports each at its end).
        var ending: (run: UInt64, until: UInt64)?
        /// The due time of the stall's heartbeat (the stall's start until its tick retimes it).
        var stallDue: UInt64 = 0
        var nextSample: UInt64 = 0
        var warned = false
        /// The due time of the heartbeat in flight (0: none), and the unknown wait it was sent
        /// into, if it was.
        var sentDue: UInt64 = 0
        /// Its sequence on the executor's clock (odd until it runs).
        var sentSequence: UInt64 = 0
        var probing: IdleProbe.Signature?
        /// The last heartbeat ran within the budget: the next wait seen is the idle wait the
        /// executor went back to.
        var ranPromptly = false
        /// An event loop found by its waits (no heartbeats): its slot.
        var loop: LoopWatch?
        /// The timed main-queue items' sequence when the stall in progress was declared: an item
        /// that began since ends it (`TimedItems`).
        var itemsSequence: UInt64 = 0
        /// When the watchdog last looked at the executor.
        var lastLook: UInt64 = 0
    }

    /// What the preload library's timing of `DispatchQueue.main`'s items shows (its slot), for the
    /// main queue's heartbeat: a heartbeat delayed by timed items is no stall of its own (each
    /// item is timed exactly), so the heartbeat only times what no item explains (a dispatch
    /// source's handler, a `sync` from another thread).
    struct TimedItems {
        /// Odd while an item runs.
        var sequence: UInt64
        /// The running item's start, or the last item's (CLOCK_MONOTONIC ns).
        var start: UInt64
        /// The last finished item's end (0: none).
        var end: UInt64
        var busy: Bool { sequence & 1 == 1 }

        init(_ slot: UnsafeMutablePointer<sw_loop_slot>) {
            let timebase = Timebase.shared
            var (sequence, start): (UInt64, UInt64) = (0, 0)
            sw_loop_read(slot, &sequence, &start)
            let end = sw_loop_last_end(slot)
            self.sequence = sequence
            self.start = timebase.nanos(start)
            self.end = end == 0 ? 0 : timebase.nanos(end)
        }
    }

    /// The watchdog thread's loop. Every check interval, for each executor: no heartbeat in
    /// flight and the thread parked in its idle wait → nothing; else no heartbeat in flight →
    /// send one due now; a heartbeat later than the budget → a stall, sampled until it runs.
    /// The watchdog sleeps on `wake` with a timeout (no signal needed from the executors).
    /// `started`: when `start()` was called (a loop's item that ended before is no stall of it).
    func watch(since started: UInt64) {
        _ = sw_set_timer_slack(1_000)
        core.raiseWatchdogPriority()
        var watches: [Watch] = []
        let budget = configuration.tiers.budget.nanoseconds
        let check = configuration.effectiveCheckInterval
        let warnAfter = configuration.unservicedWarning.nanoseconds
        let threshold = configuration.suspendThreshold.nanoseconds
        var nextID: UInt64 = 1
        var suspended = false
        var expected = sw_monotonic_ns()
        while true {
            let now = sw_monotonic_ns()
            // A watchdog that overslept by far was stopped (SIGSTOP, a debugger).
            suspended = now > expected && now - expected > threshold
            core.record { $0.watchdogWakeups += 1 }
            if watchesEventLoops.load(ordering: .relaxed) { addEventLoops() }
            let all = executors.withLock { $0 }
            for executor in all.dropFirst(watches.count) {
                let common = configuration.common
                var watch = Watch(
                    executor: executor,
                    detector: WorkItemDetector(budget: budget) { common.sampleInterval(after: $0) })
                if let slot = executor.loop {
                    watch.loop = LoopWatch(slot: slot, since: started)
                }
                watches.append(watch)
            }
            guard isRunning else { break }
            // Only a quiet pool (or none) needs no look before its next job: then the watchdog parks.
            var wakeAt = UInt64.max
            var forDeadline = false
            // A thread that is an event loop found by its waits is timed by them: an executor it
            // runs (RunLoop.main drains the main queue inside its poll loop) sends no more
            // heartbeats once its thread is known, and the loop's stalls take its label.
            var executorLabels: [Int32: String] = [:]
            var loopThreads: Set<Int32> = []
            var items: TimedItems?
            if watches.contains(where: { $0.loop != nil }) {
                for watch in watches where watch.pool == nil {
                    if let loop = watch.loop {
                        if loop.slot.pointee.kind == Int32(SW_LOOP_MAIN_QUEUE.rawValue) {
                            items = TimedItems(loop.slot)
                        } else if Self.isLoop(loop.slot) {
                            loopThreads.insert(loop.slot.pointee.tid)
                        }
                    } else if case let tid = watch.executor.tid.load(ordering: .relaxed), tid != 0 {
                        executorLabels[tid] = watch.executor.label
                    }
                }
            }
            for index in watches.indices {
                if let loop = watches[index].loop {
                    let label = Self.isLoop(loop.slot) ? executorLabels[loop.slot.pointee.tid] : nil
                    stepLoop(&watches[index], now: now, suspended: suspended, label: label, nextID: &nextID)
                    wakeAt = min(wakeAt, watches[index].detector.wakeAt ?? now &+ check)
                    continue
                }
                if watches[index].executor.pool == nil, watches[index].stall == nil,
                    loopThreads.contains(watches[index].executor.tid.load(ordering: .relaxed))
                {
                    continue
                }
                if watches[index].executor.pool != nil {
                    stepPool(&watches[index], now: now, budget: budget, suspended: suspended, nextID: &nextID)
                    if watches[index].pool?.quiet != true { wakeAt = min(wakeAt, now &+ check) }
                } else {
                    step(
                        &watches[index], now: now, budget: budget, warnAfter: warnAfter, suspended: suspended,
                        items: watches[index].executor.drainsMainQueue ? items : nil, nextID: &nextID)
                    wakeAt = min(wakeAt, now &+ check)
                }
                if watches[index].stall != nil {
                    wakeAt = min(wakeAt, watches[index].nextSample)
                } else if watches[index].sampler != nil || watches[index].pool != nil {
                    // A heartbeat in flight becomes a stall at due + budget: look exactly then.
                    let pending = watches[index].executor.pending.load(ordering: .relaxed)
                    if pending != 0, pending.saturatingAdding(budget).saturatingAdding(1) < wakeAt {
                        wakeAt = max(pending.saturatingAdding(budget).saturatingAdding(1), now)
                        forDeadline = true
                    }
                }
            }
            if watches.isEmpty { wakeAt = now &+ check }
            if wakeAt == .max, let seen = watches.lazy.compactMap(\.pool).first?.seen {
                // Parked until the pool's next job (the enqueue hook wakes it), `watch` or `stop`.
                core.record { $0.poolParks += 1 }
                sw_pool_park(seen, -1)
                expected = sw_monotonic_ns()  // not a stop of the process
                continue
            }
            // One reading of the clock: read twice, it could pass `expected` between the
            // comparison and the subtraction (an overflow trap with many loops).
            let current = sw_monotonic_ns()
            expected = max(wakeAt, current)
            let delay = expected - current
            _ = wake.wait(timeout: .now() + .nanoseconds(Int(clamping: delay)))
            if forDeadline, configuration.watchdogLatenessForTesting > .zero {
                sleepForTesting(configuration.watchdogLatenessForTesting)
                expected = sw_monotonic_ns()  // not a stop of the process
            }
        }
        // A loop's stall that ended since the last look ends exactly, not unfinished.
        for index in watches.indices where watches[index].loop != nil && watches[index].stall != nil {
            stepLoop(&watches[index], now: sw_monotonic_ns(), suspended: false, label: nil, nextID: &nextID)
        }
        for index in watches.indices where watches[index].stall != nil {
            var stall = watches[index].stall!
            if watches[index].ending == nil { stall.flags.insert(.unfinished) }
            watches[index].scopes.settle(&stall, budget: budget)
            watches[index].sampler?.endStall()
            for sampler in watches[index].pool?.sampled ?? [] { sampler.endStall() }
            core.deliverEnded(stall)
        }
    }

    private func step(
        _ watch: inout Watch, now: UInt64, budget: UInt64, warnAfter: UInt64, suspended: Bool, items: TimedItems?,
        nextID: inout UInt64
    ) {
        let previousLook = watch.lastLook
        watch.lastLook = now
        let tid = watch.executor.tid.load(ordering: .acquiring)
        if tid != watch.heartbeatTid, tid != 0 {
            watch.heartbeatTid = tid
            follow(&watch, thread: tid, prepared: true)
        }
        stepExecutor(
            &watch, now: now, budget: budget, warnAfter: warnAfter, suspended: suspended, items: items,
            previousLook: previousLook, nextID: &nextID)
    }

    /// A new thread runs the executor (libdispatch moves the main queue between workers): the
    /// probes and the sampler follow it. `prepared`: a heartbeat or a timed item prepared the
    /// thread for the sampling signal.
    private func follow(_ watch: inout Watch, thread tid: Int32, prepared: Bool) {
        let executor = watch.executor
        watch.tid = tid
        watch.probe = IdleProbe(tid: tid)
        watch.own = nil  // closes the last thread's ticks first
        watch.own = prepared ? openSelfSampler(tid: tid, clock: executor.clock) : nil
        watch.sampler?.endStall()
        let sampler = ThreadSampler(
            tid: tid, configuration: configuration.common, canCapture: samplerError == nil && prepared,
            annotations: executor.scopes.withLock { $0 }, usePerf: configuration.perfSampling, own: watch.own)
        core.recordCommon { $0.perfSampling = sampler.stacks.perfStatus }
        watch.sampler = sampler
    }

    private func stepExecutor(
        _ watch: inout Watch, now: UInt64, budget: UInt64, warnAfter: UInt64, suspended: Bool, items: TimedItems?,
        previousLook: UInt64, nextID: inout UInt64
    ) {
        let executor = watch.executor
        if suspended { watch.stall?.flags.insert(.suspended) }
        if watch.ending != nil {
            endWithTick(&watch, now: now, budget: budget)
            return
        }
        var (look, ran) = heartbeatLook(&watch, budget: budget)
        if let ran, watch.stall == nil {
            // The heartbeat ran within the budget (it was no stall): the thread was free to run
            // it, so a wait it was sent into is an idle wait, and so is the next wait it parks in.
            let prompt = ran.at &- ran.due <= budget
            if prompt, let probing = watch.probing { watch.probe?.learn(probing) }
            // Late behind timed items: each is timed on its own.
            if items.map({ $0.busy || $0.end >= ran.due }) ?? false { look.overruns = [] }
            watch.ranPromptly = prompt
            watch.probing = nil
        }
        var endedByItem = false
        if let items, let stalled = watch.detector.stalled, items.sequence != watch.itemsSequence {
            // A timed item began (whether or not the heartbeat ran since): the stall was the
            // untimed work before it. The item's start is known if it is the only one since the
            // last look, else the look bounds it.
            let began = items.sequence &- watch.itemsSequence <= 2 ? items.start : previousLook
            if look.sequence == stalled.sequence { look.sequence &+= 1 }
            look.overruns = [.init(sequence: stalled.sequence, start: stalled.start, end: began)]
            endedByItem = true
        } else if let items, look.sequence & 1 == 1, watch.detector.stalled == nil {
            if items.busy {
                look.sequence &-= 1  // waiting behind a timed item is the item's
            } else {
                look.start = max(look.start, items.end)  // the wait counts from the last item's end
            }
        }
        if look.sequence & 1 == 1, watch.detector.stalled == nil, now >= look.start.saturatingAdding(budget),
            !canBegin(&watch, now: now, warnAfter: warnAfter, items: items)
        {
            look.sequence &-= 1
        }
        for action in watch.detector.look(look, now: now) {
            switch action {
            case .began(let sequence, let start):
                watch.stall = newStall(of: executor, start: start, suspended: suspended, nextID: &nextID)
                watch.progressed = 0
                watch.stallDue = watch.sentDue
                watch.itemsSequence = items?.sequence ?? 0
                watch.probing = nil
                watch.scopes = ExpectedScopeTally(scopes: watch.sampler?.annotations)
                watch.sampler?.beginStall(sequence: sequence)
            case .sample:
                if let sampler = watch.sampler { sampleStall(&watch, [sampler], now: now, budget: budget) }
            case .ended(_, _, let end, _):
                guard var stall = watch.stall else { break }
                stall.end = max(end, stall.start)
                watch.sampler?.endStall()
                guard endedByItem else {
                    // The heartbeat ran: the stall ended when it did, or as the tick that ran it says.
                    watch.stall = stall
                    watch.ending = (executor.runs.load(ordering: .relaxed), now.saturatingAdding(Self.tickWait))
                    endWithTick(&watch, now: now, budget: budget)
                    break
                }
                watch.stall = nil
                watch.scopes.settle(&stall, budget: budget)
                core.deliverEnded(stall)
                // A heartbeat that still waits: what delays it after the items is a stall of its own.
                if ran == nil { watch.sentSequence = executor.sent() }
            case .missed(let overrun):
                recordMissedStall(watch, overrun, suspended: suspended, nextID: &nextID)
            case .abandoned:
                break  // an executor is watched until the monitor stops
            }
        }
        if watch.ending == nil { watch.nextSample = watch.detector.wakeAt ?? now }
        guard watch.stall == nil, executor.pending.load(ordering: .acquiring) == 0 else { return }
        // Stallwatch's own work on the executor: no heartbeat waits behind it.
        guard executor.isFreeOfOwnWork else { return }
        // No heartbeat in flight: send one unless the thread is parked in its idle wait.
        if let probe = watch.probe {
            // Only the first look after a heartbeat ran can learn from it.
            let afterHeartbeat = watch.ranPromptly
            watch.ranPromptly = false
            switch probe.state() {
            case .idle:
                core.record { $0.idleChecks += 1 }
                return
            case .unknownWait(let signature) where afterHeartbeat:
                // Back in a wait right after a heartbeat ran: where the executor parks.
                probe.learn(signature)
                core.record { $0.idleChecks += 1 }
                return
            case .unknownWait(let signature):
                watch.probing = signature
            case .busy, .gone:
                break
            }
        } else if executor.runs.load(ordering: .relaxed) > 0 {
            return
        }
        send(&watch, now: now)
    }

    /// Whether a heartbeat past its deadline can be timed as a stall now: the main queue's
    /// heartbeat follows the thread draining the queue (none drains it: it waits for a thread, a
    /// loaded machine, and runs nothing of the app's); an executor that never ran a heartbeat has
    /// no thread to sample, and perhaps nobody services it (warned once).
    private func canBegin(_ watch: inout Watch, now: UInt64, warnAfter: UInt64, items: TimedItems?) -> Bool {
        if items != nil, case let drainer = sw_main_queue_drainer(), drainer >= 0 {
            guard drainer != 0 else { return false }
            if drainer != watch.tid {
                follow(&watch, thread: drainer, prepared: Self.preparedThreads.withLock { $0.contains(drainer) })
            }
        }
        guard watch.sampler == nil else { return true }
        if !watch.warned, now &- watch.executor.added > warnAfter {
            watch.warned = true
            warn(unservicedMessage(watch.executor, after: now &- watch.executor.added))
        }
        return false
    }

    /// The heartbeat in flight as the detector's work item: it runs from its due time until it
    /// runs (the executor's clock is odd meanwhile). Once it ran, its run time is its end, logged
    /// for the detector when it was later than the budget or a stall was timed on it; `ran` is
    /// then its due and run times. A heartbeat that began to run but has not yet published its
    /// end (`pending`) still shows in flight to a stall timed on it, and to nothing else.
    func heartbeatLook(
        _ watch: inout Watch, budget: UInt64
    ) -> (look: WorkItemDetector.Look, ran: (due: UInt64, at: UInt64)?) {
        let sequence = sw_clock_sequence(watch.executor.clock)
        var look = WorkItemDetector.Look(sequence: sequence, start: watch.sentDue)
        guard watch.sentDue != 0, sequence != watch.sentSequence else { return (look, nil) }
        let stalled = watch.detector.stalled?.sequence == watch.sentSequence
        guard watch.executor.pending.load(ordering: .acquiring) != watch.sentDue else {
            if stalled { look.sequence = watch.sentSequence }
            return (look, nil)
        }
        let ran = (due: watch.sentDue, at: watch.executor.ranAt.load(ordering: .relaxed))
        watch.sentDue = 0
        if ran.at &- ran.due > budget || stalled {
            look.overruns = [.init(sequence: watch.sentSequence, start: ran.due, end: max(ran.at, ran.due))]
        }
        return (look, ran)
    }

    /// Sends the executor a heartbeat due `now`, the detector's next item.
    func send(_ watch: inout Watch, now: UInt64) {
        watch.sentDue = now
        watch.sentSequence = watch.executor.sent()
        watch.executor.pending.store(now, ordering: .releasing)
        core.record { $0.heartbeatsSent += 1 }
        sendHeartbeat(to: watch.executor)
    }

    /// One look's samples of a stall in progress (`samplers`' threads, up to the per-stall
    /// limit, each at its own time: the look number they share is the samplers'), handed to the
    /// listeners as begun at the stall's first look (`progressed` 0, as a stall begins), then
    /// every `stallProgressInterval`.
    func sampleStall(_ watch: inout Watch, _ samplers: [ThreadSampler], now: UInt64, budget: UInt64) {
        guard var stall = watch.stall else { return }
        for sampler in samplers where stall.samples.count < configuration.maxSamplesPerStall {
            stall.samples.append(sampler.sample(record: core.recordCommon))
            watch.scopes.note(sampler, &stall)
        }
        let interval = configuration.common.sampleInterval(after: now &- stall.start)
        for sampler in samplers { sampler.follow(interval: interval) }
        core.deliverSampled(
            stall, first: watch.progressed == 0, progressed: &watch.progressed, looked: now, budget: budget)
        watch.stall = stall
    }

    /// The stall's heartbeat ran: its end waits (up to `tickWait`) for the executor's tick that ran
    /// it, which may retime it (`time(_:due:budget:by:)`), then it is delivered.
    private func endWithTick(_ watch: inout Watch, now: UInt64, budget: UInt64) {
        guard var stall = watch.stall, let ending = watch.ending else { return }
        let tick = watch.executor.tick(ofRun: ending.run)
        if tick == nil, watch.executor.reportsTicks, now < ending.until {
            watch.nextSample = now &+ Self.tickPoll
            return
        }
        if let tick { Self.time(&stall, due: watch.stallDue, budget: budget, by: tick) }
        watch.stall = nil
        watch.ending = nil
        watch.scopes.settle(&stall, budget: budget)
        core.deliverEnded(stall)
    }

    /// Sends `executor` a heartbeat, untimed by the preload library's dispatch trampolines: its
    /// delay is what it measures, and its first run on a thread prepares that thread (our work,
    /// not the app's item).
    func sendHeartbeat(to executor: Executor) {
        sw_dispatch_set_untimed(1)
        defer { sw_dispatch_set_untimed(0) }
        executor.schedule { [executor] in executor.beat() }
    }

    /// The ticks of an executor's thread `tid` (prepared by the heartbeat that named it), or nil
    /// where they are off or impossible (`statistics.selfSampling` says which).
    func openSelfSampler(tid: Int32, clock: UnsafeMutablePointer<sw_callout_clock>) -> SelfSampler? {
        guard configuration.selfSampling, samplerError == nil else {
            core.recordCommon { $0.selfSampling = .disabled }
            return nil
        }
        let (own, status) = SelfSampler.open(tid: tid, clock: clock, configuration: configuration.common)
        core.recordCommon { $0.selfSampling = status }
        guard let own, own.enable() else { return nil }
        return own
    }

    /// A heartbeat that ran later than the budget, over before the watchdog looked (it got no
    /// CPU): a stall it did not see while it lasted, timed from the heartbeat, with the thread's
    /// own captures. Only with them: they show the thread ran user code past the budget (a thread
    /// that merely waited for a CPU, as the watchdog did, takes no tick).
    private func recordMissedStall(
        _ watch: Watch, _ overrun: WorkItemDetector.Overrun, suspended: Bool, nextID: inout UInt64
    ) {
        let deadline = overrun.start.saturatingAdding(configuration.tiers.budget.nanoseconds)
        let captures = watch.own?.takeAll(sequence: overrun.sequence, after: deadline) ?? []
        guard !captures.isEmpty else { return }
        var timed = newStall(of: watch.executor, start: overrun.start, suspended: suspended, nextID: &nextID)
        timed.end = overrun.end
        // The tick that ran the heartbeat has mostly ended by now (not waited for).
        if let tick = watch.executor.tick(ofRun: watch.executor.runs.load(ordering: .relaxed)) {
            Self.time(&timed, due: overrun.start, budget: configuration.tiers.budget.nanoseconds, by: tick)
        }
        var stall = timed
        stall.end = nil
        core.deliverMissed(stall, captures: captures, deadline: deadline, end: timed.end ?? overrun.end)
    }

    /// How often the watchdog looks for the tick that ran a stall's heartbeat, and how long it
    /// waits for it: the tick normally ends within a millisecond of the heartbeat, but a loop
    /// preempted on a loaded machine ended its tick 7 ms later in a test.
    static let tickPoll: UInt64 = 500_000
    static let tickWait: UInt64 = 100_000_000

    /// `stall`, whose heartbeat was due at `due`, timed by the executor's own tick that ran the
    /// heartbeat: a tick already running when the heartbeat was sent held the executor all along,
    /// so it is the stall, start to end. So is a tick over `budget` long that began less than
    /// `budget` after the due time: the executor was idle or waking meanwhile (work queued just
    /// ahead of the heartbeat, run in the same tick), not stalled. A tick that began later ends the
    /// stall when it began (the executor was busy outside its ticks, e.g. handling I/O events,
    /// whose start stays the heartbeat's due time).
    static func time(_ stall: inout Stall, due: UInt64, budget: UInt64, by tick: (start: UInt64, end: UInt64)) {
        if tick.start <= due || (tick.start - due < budget && tick.end &- tick.start >= budget) {
            (stall.start, stall.end) = (tick.start, tick.end)
        } else if let end = stall.end, tick.start < end {
            stall.end = tick.start
        }
    }

    /// The stall of `executor` whose heartbeat was due at `start`, numbered from `nextID`.
    func newStall(
        of executor: Executor, start: UInt64, suspended: Bool, label: String? = nil, nextID: inout UInt64
    ) -> Stall {
        defer { nextID += 1 }
        var callout = identity(of: executor)
        if let label { callout.label = label }
        return Stall(
            id: nextID, start: start, end: nil, tier: .hitch, callout: callout,
            flags: suspended ? [.suspended] : [], context: AppState.current)
    }

    /// A heartbeat stall's callout: the executor, by its label (the work that blocked it is
    /// in the samples' stacks).
    func identity(of executor: HeartbeatMonitor.Executor) -> CalloutIdentity {
        CalloutIdentity(
            kind: .post, label: executor.label, file: HeartbeatMonitor.calloutFile, line: 0,
            mode: executor.loop.map { Self.loopMode(kind: $0.pointee.kind) } ?? HeartbeatMonitor.calloutMode,
            phase: .beforeSources)
    }

    /// The `mode` of a stall of an event loop found by its waits: how it waits (`epoll`,
    /// `poll`, `select`), or how dispatched items were timed (`items`, `jobs`), so the trace says
    /// how the executor was timed.
    static func loopMode(kind: Int32) -> String {
        switch kind {
        case Int32(SW_LOOP_EPOLL.rawValue): "epoll"
        case Int32(SW_LOOP_POLL.rawValue): "poll"
        case Int32(SW_LOOP_SELECT.rawValue): "select"
        case Int32(SW_LOOP_MAIN_QUEUE.rawValue): StallwatchSymbols.queueItemsMode
        default: StallwatchSymbols.poolJobsMode
        }
    }

    private func unservicedMessage(_ executor: HeartbeatMonitor.Executor, after nanos: UInt64) -> String {
        let seconds = Double(nanos) / 1e9
        let waited = String(format: "%.1f", seconds)
        if executor.label == Self.mainQueueLabel {
            return "DispatchQueue.main has not run a block in \(waited) s: this program does not seem to\n"
                + "  service the main queue (dispatchMain() or RunLoop.main); its stalls are not seen until it does"
        }
        return "executor \"\(executor.label)\" has not run its first heartbeat in \(waited) s;\n"
            + "  its stalls are not seen until it does"
    }
}

extension HeartbeatMonitor {
    /// The `file` of a heartbeat stall's callout: the trace's call site says how it was found.
    public static let calloutFile = StallwatchSymbols.heartbeatFile
    /// The `mode` of a heartbeat stall's callout.
    public static let calloutMode = StallwatchSymbols.heartbeatMode
}
