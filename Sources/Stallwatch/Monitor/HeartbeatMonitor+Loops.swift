import CStallwatchSampler
import CStallwatchShims
import Glibc
import StallwatchCore

extension HeartbeatMonitor {
    /// The label of `DispatchQueue.main`'s stalls: `watchMainQueue`'s default, and its items' when
    /// the preload library times each. A constant; any thread.
    public static let mainQueueLabel = "main-queue"

    /// Watches every event-loop thread the preload library finds by its waits (`epoll_wait`,
    /// `poll`, `select` and their variants: swift-nio, GLib, libuv, asyncio): each iteration is a
    /// work item with exact boundaries (the wait's return to the next wait's call), so a stall
    /// starts and ends with the iteration. No heartbeats are sent to them. Each loop is named by
    /// its thread's name. The items of `DispatchQueue.main` and the Swift jobs of pool threads,
    /// which the preload library times where they run, are watched the same way: a main-queue
    /// item or a pool job longer than the budget is a stall, labelled `mainQueueLabel` or the
    /// pool's label. In a process without the preload library nothing calls the hooks and there
    /// is nothing to watch. Before or after `start()`; any thread.
    public func watchEventLoops() {
        watchesEventLoops.store(true, ordering: .relaxed)
        wakeWatchdog()
    }

    /// What the monitor watches so far, for a trace's `watched` records: every event loop found,
    /// and every executor whose first heartbeat has run (one never serviced is watched in name
    /// only). In the order they were added. Any thread.
    var watchedExecutors: [WatchedExecutor] {
        var jobs = false
        return executors.withLock { $0 }.compactMap { executor in
            if let slot = executor.loop {
                // The pool's jobs are one executor however many threads ran them.
                if slot.pointee.kind == Int32(SW_LOOP_JOBS.rawValue) {
                    if jobs { return nil }
                    jobs = true
                    return WatchedExecutor(
                        label: executor.label, how: StallwatchSymbols.poolJobsMode, tid: 0, since: executor.added)
                }
                return WatchedExecutor(
                    label: executor.label, how: Self.loopMode(kind: slot.pointee.kind),
                    tid: UInt32(bitPattern: slot.pointee.tid), since: executor.added)
            }
            guard executor.heartbeatsRun > 0 else { return nil }
            return WatchedExecutor(
                label: executor.label, how: executor.pool != nil ? WatchedExecutor.pool : HeartbeatMonitor.calloutMode,
                tid: UInt32(bitPattern: executor.tid.load(ordering: .relaxed)), since: executor.added)
        }
    }

    /// The event loops found so far, by label (their threads' names). Any thread.
    public var eventLoops: [String] {
        executors.withLock { $0.filter { $0.loop.map(Self.isLoop) ?? false }.map(\.label) }
    }

    /// Whether `slot` is an event loop's (its thread is the loop), not dispatched items'.
    static func isLoop(_ slot: UnsafeMutablePointer<sw_loop_slot>) -> Bool {
        slot.pointee.kind <= Int32(SW_LOOP_SELECT.rawValue)
    }

    /// The pool threads: those that ran a Swift job and still own their slot (the preload
    /// library times jobs); none yet where it has wrapped a job but no job has begun (a thread
    /// that only has the pool's name is no pool thread: sourcekit-lsp's trace writer, started
    /// from a default-pool worker, has it for its first moments); nil where no job was wrapped,
    /// the slots are not watched, or some pool thread found no slot (then the pool's threads are
    /// found by name). The watchdog.
    func jobThreads() -> [Int32]? {
        guard watchesEventLoops.load(ordering: .relaxed), sw_dispatch_jobs_refused() == 0 else { return nil }
        let slots = executors.withLock { $0.compactMap(\.loop) }.filter {
            $0.pointee.kind == Int32(SW_LOOP_JOBS.rawValue)
        }
        guard !slots.isEmpty || sw_dispatch_jobs_wrapped() != 0 else { return nil }
        return slots.compactMap { slot in
            var generation: UInt64 = 0
            var tid: Int32 = 0
            return sw_loop_owner(slot, &generation, &tid) != 0 ? tid : nil
        }.sorted()
    }

    /// The watchdog: one executor per loop slot that became ready since it last looked.
    func addEventLoops() {
        // A slot made before the watchdog's first look at it logs its overruns from the start.
        sw_loop_set_default_budget(Timebase.shared.cycles(configuration.tiers.budget.nanoseconds))
        let known = executors.withLock { $0.lazy.filter { $0.loop != nil }.count }
        guard sw_loop_slot_count() > known else { return }
        // Loop threads prepare themselves for sampling (as a heartbeat would) once they go idle.
        if samplerError == nil {
            sw_loop_set_thread_hook { HeartbeatMonitor.prepareThreadForItems() }
            sw_loop_set_item_hook { HeartbeatMonitor.prepareThreadForItems() }
        }
        var index = UInt32(known)
        while index < sw_loop_slot_count(), let slot = sw_loop_slot_at(index) {
            let name = withUnsafeBytes(of: slot.pointee.name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            let label =
                switch slot.pointee.kind {
                case Int32(SW_LOOP_MAIN_QUEUE.rawValue): Self.mainQueueLabel
                case Int32(SW_LOOP_JOBS.rawValue):
                    executors.withLock { $0.first { $0.pool != nil }?.label } ?? Self.poolLabel
                default: name.isEmpty ? "loop-\(slot.pointee.tid)" : name
                }
            executors.withLock {
                $0.append(Executor(label: label, schedule: { _ in }, preparationDelayForTesting: .zero, loop: slot))
            }
            index += 1
        }
        if known == 0, index > 0, let first = firstLoop.withLock({ $0 }) { first() }
    }

    /// The threads the loop-thread hook prepared for sampling (once each, as they first go idle):
    /// a thread that runs dispatched items is signalled only once prepared.
    static let preparedThreads = Locked<Set<Int32>>([])

    /// What the loop-thread hook does on its thread: prepares it for sampling and notes it. Also
    /// called by the preload shim, through the preload library, on the thread whose loop made it
    /// load the library (that thread ran the shim's hook instead). Nothing before the sampler is
    /// installed. The calling thread only.
    static func prepareThreadForItems() {
        guard Sampler.isInstalled else { return }
        Sampler.prepareCurrentThread()
        preparedThreads.withLock { _ = $0.insert(sw_gettid()) }
    }

    /// The watchdog's state for a loop found by its waits.
    struct LoopWatch {
        let slot: UnsafeMutablePointer<sw_loop_slot>
        /// Where the watchdog stands in the slot's overrun log.
        var cursor: UInt64 = 0
        /// The loop's thread is gone or its descriptor closed: nothing more to time.
        var gone = false
        /// The thread of the item the last look saw (the main queue's items move between threads).
        var itemThread: Int32 = 0
        /// Whether the sampler was made for a thread prepared for sampling (a thread that runs
        /// dispatched items is prepared at its first item: a sampler made before is remade).
        var samplerPrepared = false

        /// The slot as the callout clock its thread's own ticks read (`sw_loop_slot`'s first words).
        var clock: UnsafeMutablePointer<sw_callout_clock> {
            UnsafeMutableRawPointer(slot).assumingMemoryBound(to: sw_callout_clock.self)
        }

        /// Overruns that ended before this are not the monitor's stalls (CLOCK_MONOTONIC ns).
        let since: UInt64

        /// `since`: when the monitor began to watch. Overruns that ended before it are not its
        /// stalls (a loop outlives monitors: each recording starts its own); one that ended after,
        /// logged before the watchdog first looked at the slot (it got no CPU), is.
        init(slot: UnsafeMutablePointer<sw_loop_slot>, since: UInt64) {
            self.slot = slot
            self.since = since
            let head = sw_loop_overrun_head(slot)
            cursor = head &- min(head, UInt64(SW_LOOP_OVERRUNS))
        }

        /// What the slot shows now: the sequence first, then the log (an iteration's overrun is
        /// logged before its sequence moves on, so a finished stall's end is always read).
        /// `stalled`: a stall of the loop is in progress.
        mutating func look(now: UInt64, budget: UInt64, stalled: Bool) -> WorkItemDetector.Look {
            let timebase = Timebase.shared
            timebase.refresh()
            sw_loop_set_budget(slot, timebase.cycles(budget))
            var sequence: UInt64 = 0
            var startCycles: UInt64 = 0
            sw_loop_read_item(slot, &sequence, &startCycles, &itemThread)
            var look = WorkItemDetector.Look(sequence: sequence, start: timebase.nanos(startCycles))
            withUnsafeTemporaryAllocation(of: sw_loop_overrun.self, capacity: Int(SW_LOOP_OVERRUNS)) { buffer in
                var lost: UInt64 = 0
                let count = sw_loop_read_overruns(slot, &cursor, buffer.baseAddress, &lost)
                for entry in buffer.prefix(Int(count)) {
                    let start = timebase.nanos(entry.start)
                    guard start &+ timebase.duration(from: entry.start, to: entry.end) > since else { continue }
                    look.overruns.append(
                        .init(
                            sequence: entry.sequence, start: start,
                            end: start &+ timebase.duration(from: entry.start, to: entry.end)))
                }
            }
            // Only an item past its deadline (or a stall) asks whether the loop is still there:
            // after its last iteration a thread may go on with other work (asyncio.run returned).
            let overdue = sequence & 1 == 1 && now >= look.start.saturatingAdding(budget)
            if overdue || stalled { look.gone = !Self.alive(slot) }
            return look
        }

        /// Whether the loop's thread still runs and its descriptor is still open.
        private static func alive(_ slot: UnsafeMutablePointer<sw_loop_slot>) -> Bool {
            // The thread's /proc directory goes with it (a tid is not reused while the process
            // lives long enough to matter here: the kernel cycles through pid_max first).
            if access("/proc/self/task/\(slot.pointee.tid)", F_OK) != 0 { return false }
            return sw_loop_is_open(slot) != 0
        }
    }

    /// One look at a loop found by its waits: the detector's actions, carried out. `label`, if
    /// given, names its stalls instead of the thread's name (an executor the loop runs).
    func stepLoop(_ watch: inout Watch, now: UInt64, suspended: Bool, label: String?, nextID: inout UInt64) {
        guard var loop = watch.loop else { return }
        defer { watch.loop = loop }
        let budget = configuration.tiers.budget.nanoseconds
        let look = loop.look(now: now, budget: budget, stalled: watch.detector.stalled != nil)
        let actions = watch.detector.look(look, now: now)
        // The thread an item runs on: a loop's is fixed, the main queue's items move between
        // threads, and a pool thread's slot passes to another pool thread when its thread exits.
        var generation: UInt64 = 0
        var tid: Int32 = watch.tid
        if loop.slot.pointee.kind == Int32(SW_LOOP_MAIN_QUEUE.rawValue) {
            tid = loop.itemThread  // read with the item's sequence: the stall's own thread
        } else if sw_loop_owner(loop.slot, &generation, &tid) == 0 {
            tid = watch.tid
        }
        let beginning = actions.contains { if case .began = $0 { true } else { false } }
        // The sampler follows an item's thread at its stall's start, and before that too: at any
        // look that finds an item running on another thread while nothing stalls, so the item's
        // own ticks run, and keep a stack, before its deadline.
        let follows = beginning || (look.sequence & 1 == 1 && watch.detector.stalled == nil)
        let prepared = Self.isLoop(loop.slot) || Self.preparedThreads.withLock { $0.contains(tid) }
        if watch.sampler == nil || (follows && (tid != watch.tid || prepared != loop.samplerPrepared)) {
            watch.tid = tid
            loop.samplerPrepared = prepared
            // The thread samples itself: its own ticks read the slot as their callout clock (its
            // first words are one), so it keeps a stack of an item past half its budget and takes
            // one once the item is overdue, however late the watchdog runs (a thread kept off the
            // CPU at its deadline gets no stack from a watchdog's signal until it runs again), and
            // no signal lands in its next wait. A loop thread prepared itself at its first idle
            // wait; a thread that runs dispatched items, at its first item.
            watch.own = nil  // closes the last thread's ticks first
            watch.own = prepared ? openSelfSampler(tid: tid, clock: loop.clock) : nil
            let sampler = ThreadSampler(
                tid: tid, configuration: configuration.common, canCapture: samplerError == nil && prepared,
                annotations: nil, usePerf: configuration.perfSampling, own: watch.own)
            core.recordCommon { $0.perfSampling = sampler.stacks.perfStatus }
            watch.sampler = sampler
        }
        guard let sampler = watch.sampler else { return }
        if suspended { watch.stall?.flags.insert(.suspended) }
        for action in actions {
            switch action {
            case .began(let sequence, let start):
                watch.stall = newStall(
                    of: watch.executor, start: start, suspended: suspended, label: label, nextID: &nextID)
                watch.progressed = 0
                watch.scopes = ExpectedScopeTally()
                sampler.beginStall(sequence: sequence)
            case .sample:
                sampleStall(&watch, [sampler], now: now, budget: budget)
            case .ended(_, let start, let end, _):
                guard var stall = watch.stall else { break }
                (stall.start, stall.end) = (start, end)
                sampler.endStall()
                watch.scopes.settle(&stall, budget: budget)
                watch.stall = nil
                core.deliverEnded(stall)
            case .abandoned:
                guard var stall = watch.stall else { break }
                stall.flags.insert(.unfinished)
                sampler.endStall()
                watch.stall = nil
                core.deliverEnded(stall)
            case .missed(let overrun):
                // Over before the watchdog looked (it got no CPU): exact, without a stack.
                let stall = newStall(
                    of: watch.executor, start: overrun.start, suspended: suspended, label: label, nextID: &nextID)
                core.deliverMissed(
                    stall, captures: [], deadline: overrun.start.saturatingAdding(budget), end: overrun.end)
            }
        }
    }
}
