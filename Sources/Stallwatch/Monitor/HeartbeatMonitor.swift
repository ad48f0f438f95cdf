import CStallwatchSampler
import CStallwatchShims
import Dispatch
import Foundation
import StallwatchCore
import Synchronization

/// A stall detector for serial executors Stallwatch does not own: `DispatchQueue.main` under
/// `dispatchMain()` or Foundation's `RunLoop.main`, a swift-nio `EventLoop`, any thread with a
/// queue of closures. One watchdog thread watches any number of them.
///
/// For each executor it is given a way to run a closure there and a label. It sends a
/// heartbeat (a tiny closure) and learns the executor's thread from the first one that runs;
/// when a heartbeat is late by more than the budget, it samples that thread exactly as
/// `StallMonitor` samples a `MainLoop` (stacks, /proc facts, annotations) until the heartbeat
/// runs, and delivers the same `Stall` records, whose callout is the executor's label. An
/// executor parked in its idle wait gets no heartbeats, so an idle program stays asleep. See
/// docs/watchdog.md, "Loops Stallwatch does not own".
///
/// Create, `watch` executors, set the callbacks, `start()`, and `stop()`, from any thread.
public final class HeartbeatMonitor: @unchecked Sendable {
    /// Runs a closure on the watched executor, e.g. `{ DispatchQueue.main.async(execute: $0) }`
    /// or `{ eventLoop.execute($0) }`. Called on the watchdog thread; it must not block.
    public typealias Schedule = @Sendable (@escaping @Sendable () -> Void) -> Void

    /// How the monitor decides what a stall is and how it samples one: what every monitor is
    /// configured with (`common`, whose fields read and write as this configuration's own:
    /// `configuration.budget`, `configuration.sampleInterval`…), and how it sends heartbeats.
    @dynamicMemberLookup
    public struct Configuration: Sendable {
        /// The tiers, sampling, signal and self-sampling, as `StallMonitor`'s (a heartbeat later
        /// than `tiers.budget` is a stall; the ticks run while a heartbeat is overdue).
        public var common = MonitorConfiguration()
        /// How often the watchdog looks at a busy executor (sends the next heartbeat); nil:
        /// half the budget. It bounds how much a stall's duration is understated.
        public var checkInterval: Duration? = nil
        /// An executor whose first heartbeat has not run after this long gets one warning
        /// (it is not serviced: e.g. a program that never drains `DispatchQueue.main`).
        public var unservicedWarning: Duration = .seconds(3)

        /// The defaults: 60 Hz budget, Apple's tiers, 5 ms samples, checks every 8.3 ms, ticks
        /// from the thread CPU timer (an executor of a server switches at every request).
        public init() { common.selfSamplingTick = .threadCPUTimer }

        /// A field of `common`, as this configuration's own.
        public subscript<Value>(dynamicMember field: WritableKeyPath<MonitorConfiguration, Value>) -> Value {
            get { common[keyPath: field] }
            set { common[keyPath: field] = newValue }
        }

        /// Tests: added to the preparation of every thread new to an executor (Stallwatch's own
        /// work there, which must never be timed as the executor's).
        var preparationDelayForTesting: Duration = .zero

        var effectiveCheckInterval: UInt64 { (checkInterval ?? common.tiers.budget / 2).nanoseconds }
    }

    /// What the monitor has seen so far: what every monitor counts (`common`, over all
    /// executors, whose fields read as this value's own: `statistics.stalls`…), and its
    /// heartbeats.
    @dynamicMemberLookup
    public struct Statistics: Sendable, MonitorCounters {
        /// Stalls, captures, latencies, scheduling and self-sampling, as `StallMonitor`'s.
        public var common = MonitorStatistics()
        /// Heartbeats sent, over all executors.
        public var heartbeatsSent: UInt64 = 0
        /// Heartbeats that ran: each one a wake-up or one closure more for its executor.
        public var heartbeatsRun: UInt64 = 0
        /// Checks that found the executor parked in its idle wait and sent nothing.
        public var idleChecks: UInt64 = 0
        /// Times the watchdog thread woke up.
        public var watchdogWakeups: UInt64 = 0
        /// Times the watchdog parked until the Swift Concurrency pool got a job
        /// (`watchConcurrencyPool`; it sleeps without a timeout then).
        public var poolParks: UInt64 = 0
        /// Whether the Swift runtime's global enqueue hook is installed (`watchConcurrencyPool`).
        /// Without it the pool gets a heartbeat every check interval, idle or not.
        public var poolEnqueueHook = false
        /// Warnings given (an executor that never ran its first heartbeat).
        public var warnings: [String] = []

        /// All zero.
        public init() {}

        /// A field of `common`, as this value's own.
        public subscript<Value>(dynamicMember field: WritableKeyPath<MonitorStatistics, Value>) -> Value {
            get { common[keyPath: field] }
            set { common[keyPath: field] = newValue }
        }
    }

    /// One watched executor. Its counters may be read from any thread.
    public final class Executor: @unchecked Sendable {  // `clock` is only touched atomically
        /// The label given to `watch`; stalls carry it as their callout's label.
        public let label: String
        let schedule: Schedule
        /// The thread that ran the last heartbeat (0 until one ran).
        let tid = Atomic<Int32>(0)
        /// The due time of the heartbeat in flight (CLOCK_MONOTONIC ns), 0 when none.
        let pending = Atomic<UInt64>(0)
        /// When the last heartbeat ran.
        let ranAt = Atomic<UInt64>(0)
        let runs = Atomic<UInt64>(0)
        /// Cleared by `stop()`.
        let active = Atomic<Bool>(true)
        /// Called on the executor when its first heartbeat has run (the preload library opens
        /// its trace only then: a program that never services the queue leaves no file).
        let firstBeat = Locked<(@Sendable () -> Void)?>(nil)
        /// The annotation scopes of the executor's current thread (bound by a heartbeat).
        let scopes = Locked<AnnotationScopes?>(nil)
        let added = sw_monotonic_ns()
        /// The heartbeat as a callout, for the thread's self-sampling handler: odd while one is
        /// in flight (the watchdog sets it when it sends one, the heartbeat when it runs), with
        /// its due time in `sw_cycles()`.
        let clock: UnsafeMutablePointer<sw_callout_clock> = {
            let clock = UnsafeMutablePointer<sw_callout_clock>.allocate(capacity: 1)
            clock.initialize(
                to: sw_callout_clock(
                    sequence: 0, start_cycles: 0, descriptor: 0, label: 0, file: 0, stalled_sequence: 0))
            return clock
        }()

        /// Where the executor's own tick report (`HeartbeatMonitor.tickEnded`) stores the tick
        /// that ran a heartbeat. Never freed: a thread the executor ran on keeps pointing at it.
        /// Kept in `tickSlots`, so it stays reachable (LeakSanitizer).
        let ticks: UnsafeMutablePointer<sw_tick_slot> = {
            let slot = UnsafeMutablePointer<sw_tick_slot>.allocate(capacity: 1)
            slot.initialize(to: sw_tick_slot(armed: 0, sequence: 0, run: 0, start: 0, end: 0, reports: 0))
            Executor.tickSlots.withLock { $0.append(slot) }
            return slot
        }()

        /// Every tick slot made: one per executor ever watched.
        private static let tickSlots = Locked<[UnsafeMutablePointer<sw_tick_slot>]>([])

        /// The Swift Concurrency pool's threads that ran a heartbeat (prepared for sampling), and
        /// the name they have in /proc (`watchConcurrencyPool`); nil for a serial executor.
        let pool: Locked<PoolThreads>?

        /// The slot of an event loop found by its waits (`watchEventLoops`); nil otherwise.
        let loop: UnsafeMutablePointer<sw_loop_slot>?

        /// Its heartbeats go to `DispatchQueue.main` (`watchMainQueue`): where the preload library
        /// times the queue's items, they explain its heartbeats' delays.
        let drainsMainQueue: Bool

        init(
            label: String, schedule: @escaping Schedule, pool: Bool = false, preparationDelayForTesting: Duration,
            loop: UnsafeMutablePointer<sw_loop_slot>? = nil, drainsMainQueue: Bool = false
        ) {
            self.label = label
            self.drainsMainQueue = drainsMainQueue
            self.schedule = schedule
            self.pool = pool ? Locked(PoolThreads()) : nil
            self.preparationDelayForTesting = preparationDelayForTesting
            self.loop = loop
        }

        deinit { clock.deallocate() }

        /// The watchdog: a heartbeat due now is sent. Returns its clock sequence (odd).
        func sent() -> UInt64 {
            let current = sw_clock_sequence(clock)
            let sequence = current & 1 == 0 ? current &+ 1 : current &+ 2
            sw_clock_set_start_cycles_relaxed(clock, sw_cycles())
            sw_clock_set_sequence(clock, sequence)
            return sequence
        }

        /// The tick that ran heartbeat `run`, if the executor reported it (`tickEnded`).
        func tick(ofRun run: UInt64) -> (start: UInt64, end: UInt64)? {
            var (start, end): (UInt64, UInt64) = (0, 0)
            return sw_tick_read(ticks, run, &start, &end) == 1 ? (start, end) : nil
        }

        /// Whether the executor reports its ticks (one was reported on a thread it ran on).
        var reportsTicks: Bool { sw_tick_reported(ticks) != 0 }

        /// Heartbeats of this executor that have run (each one a wake-up or one closure more).
        public var heartbeatsRun: UInt64 { runs.load(ordering: .relaxed) }

        /// Stallwatch's own work on the executor in progress (a thread new to it being prepared
        /// for sampling, the trace being opened after the first heartbeat): the watchdog sends
        /// no heartbeat meanwhile, so that work is never timed as the executor's.
        let ownWork = Atomic<Int>(0)

        /// Tests: how long preparing a thread new to the executor takes on top of the real
        /// preparation (whose first unwind on a cold thread took 7.5 ms in a real program).
        let preparationDelayForTesting: Duration

        /// Runs on the executor: notes the thread and the time, and only then does Stallwatch's
        /// own work there: a new thread (libdispatch moves the main queue between workers, the
        /// pool has many) is prepared for sampling once; the first heartbeat's hook runs. The
        /// heartbeat is marked run first, so its time ends when the executor ran it, and that
        /// work is bracketed by `ownWork`, so no heartbeat waits behind it.
        func beat() {
            // A heartbeat that runs after `stop()` does nothing: the program may have taken the
            // sampling signal over since (the preload library yields to its own Stallwatch).
            guard active.load(ordering: .acquiring) else { return }
            let now = sw_monotonic_ns()
            let thread = sw_gettid()
            // Pool threads take turns: each is prepared once, the first time one runs here.
            let newThread =
                pool.map { $0.withLock { $0.prepared.insert(thread).inserted } }
                ?? (tid.load(ordering: .relaxed) != thread)
            ranAt.store(now, ordering: .relaxed)
            let sequence = sw_clock_sequence(clock)
            if sequence & 1 == 1 { sw_clock_set_sequence(clock, sequence &+ 1) }
            let run = runs.add(1, ordering: .relaxed).newValue
            let hook = run == 1 ? firstBeat.withLock({ $0 }) : nil
            let own = newThread || hook != nil
            // Published with the heartbeat's end (`pending`, released): a watchdog that sees the
            // heartbeat ran sees the work after it too.
            if own { ownWork.add(1, ordering: .relaxed) }
            sw_tick_arm(ticks, run)
            pending.store(0, ordering: .releasing)
            guard own else { return }
            defer { ownWork.subtract(1, ordering: .releasing) }
            if newThread {
                Sampler.prepareCurrentThread()
                if preparationDelayForTesting > .zero { sleepForTesting(preparationDelayForTesting) }
                if let pool {
                    let name = PoolThreads.currentName()
                    pool.withLock { $0.name = name }
                } else {
                    let current = AnnotationScopes.current ?? Self.bindScopes()
                    scopes.withLock { $0 = current }
                    tid.store(thread, ordering: .releasing)
                }
            }
            hook?()
        }

        /// Whether the watchdog may send a heartbeat: none of Stallwatch's own work runs on the
        /// executor. Watchdog thread.
        var isFreeOfOwnWork: Bool { ownWork.load(ordering: .acquiring) == 0 }

        /// Gives a thread without a `MainLoop` annotation scopes, so `annotate` works there
        /// (kept for the process's life: a thread-specific value cannot be freed safely). Kept
        /// in `boundScopes`, not by an unbalanced retain, so they stay reachable (LeakSanitizer
        /// would report the scopes of a thread that has exited).
        private static func bindScopes() -> AnnotationScopes {
            let scopes = AnnotationScopes()
            boundScopes.withLock { $0.append(scopes) }
            scopes.bindToCurrentThread()
            return scopes
        }

        /// Every scope `bindScopes` made: one per executor thread a heartbeat ever ran on.
        private static let boundScopes = Locked<[AnnotationScopes]>([])
    }

    /// For an executor that reports its own ticks (a swift-nio event loop, through its
    /// `NIOEventLoopMetricsDelegate`): call on the executor's thread at the end of each tick,
    /// with when it began and ended (CLOCK_MONOTONIC ns, as `NIODeadline.uptimeNanoseconds`).
    /// A stall that ends in a tick is then timed by it: the tick that was running when its
    /// heartbeat was sent is the stall, start to end; one that began after (the executor was
    /// busy outside its ticks, e.g. handling I/O events) ends the stall when it began. A few
    /// nanoseconds per tick (a thread-local read, one load); no lock, no allocation.
    @inline(__always)
    public static func tickEnded(start: UInt64, end: UInt64) { sw_tick_report(start, end) }

    /// The configuration it was created with.
    public let configuration: Configuration

    let executors = Locked<[Executor]>([])
    /// Whether the event loops the preload library finds by their waits are watched.
    let watchesEventLoops = Atomic<Bool>(false)
    /// Called on the watchdog thread when the first event loop is found (the preload library
    /// opens its trace then, as at an executor's first heartbeat).
    let firstLoop = Locked<(@Sendable () -> Void)?>(nil)
    /// The callbacks, statistics, delivery and watchdog thread, as `StallMonitor`'s.
    let core: MonitorCore<Statistics>
    private let warning = Locked<(@Sendable (String) -> Void)?>(nil)
    let wake = DispatchSemaphore(value: 0)
    var symbolicator: Symbolicator { core.symbolicator }
    /// Why stacks cannot be captured, if they cannot. Read it after `start()`.
    public var samplerError: StallMonitor.SamplerError? { core.samplerError }

    /// A monitor with `configuration`; it watches nothing until `watch` is called. Any thread.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.core = MonitorCore(configuration: configuration.common, deliveryLabel: "stallwatch.heartbeat.delivery")
    }

    /// Watches an executor: `schedule` runs a closure on it, `label` names it in stalls
    /// ("main-queue", "loop-0"…). Before or after `start()`; any thread.
    @discardableResult
    public func watch(label: String, schedule: @escaping Schedule) -> Executor {
        add(
            Executor(
                label: label, schedule: schedule,
                preparationDelayForTesting: configuration.preparationDelayForTesting))
    }

    func add(_ executor: Executor) -> Executor {
        executors.withLock { $0.append(executor) }
        wakeWatchdog()
        return executor
    }

    /// Rouses the watchdog, whether it sleeps on `wake` or is parked until the pool gets work.
    func wakeWatchdog() {
        wake.signal()
        sw_pool_wake()
    }

    /// Watches `DispatchQueue.main`, which `dispatchMain()` and Foundation's `RunLoop.main`
    /// both drain. Any thread.
    @discardableResult
    public func watchMainQueue(label: String = HeartbeatMonitor.mainQueueLabel) -> Executor {
        add(
            Executor(
                label: label, schedule: { DispatchQueue.main.async(execute: $0) },
                preparationDelayForTesting: configuration.preparationDelayForTesting, drainsMainQueue: true))
    }

    /// Called as soon as a stall is detected, with its first sample (flagged `unfinished`).
    /// Runs on the monitor's delivery queue. Set before `start()`.
    public var onStallBegan: (@Sendable (Stall) -> Void)? {
        get { core.onStallBegan }
        set { core.onStallBegan = newValue }
    }

    /// Called when a stall has ended (its heartbeat ran), with all samples (symbolicated).
    /// Runs on the monitor's delivery queue.
    public var onStallEnded: (@Sendable (Stall) -> Void)? {
        get { core.onStallEnded }
        set { core.onStallEnded = newValue }
    }

    /// Called once per executor whose first heartbeat did not run within
    /// `unservicedWarning`, with a sentence saying so; nil prints it on stderr. Runs on the
    /// delivery queue.
    public var onWarning: (@Sendable (String) -> Void)? {
        get { warning.withLock { $0 } }
        set { warning.withLock { $0 = newValue } }
    }

    /// A snapshot of the counters. Any thread.
    public var statistics: Statistics {
        var snapshot = core.statistics
        snapshot.heartbeatsRun = executors.withLock { $0 }.reduce(0) { $0 + $1.heartbeatsRun }
        return snapshot
    }

    /// Starts the watchdog thread. Throws if the sampling signal is taken by someone else; if
    /// libunwind cannot be loaded, the monitor still runs and `samplerError` says why. Any thread.
    public func start() throws {
        require(!core.isRunning, "HeartbeatMonitor.start called twice")
        PreloadYield.yield()  // a preloaded heartbeat monitor frees the sampling signal
        try core.installSampler()
        // Before the first heartbeat prepares an executor's thread: it unblocks only signals
        // already installed. (Why not, if not: `statistics.selfSampling`, once a thread is known.)
        if configuration.selfSampling && samplerError == nil { SelfSampler.installSignal() }
        core.startWatchdog(name: "stallwatchbeat") { [self] in watch() }
    }

    /// Stops watching and waits for the watchdog (a stall in progress is delivered as
    /// unfinished) and the delivery queue. Any thread, a callback of the monitor's included (it
    /// then does not wait for the deliveries queued after that callback).
    public func stop() {
        guard
            core.stopWatchdog(wake: {
                for executor in executors.withLock({ $0 }) { executor.active.store(false, ordering: .releasing) }
                wakeWatchdog()
            })
        else { return }
        core.drainDeliveries()
    }

    deinit { stop() }

    var isRunning: Bool { core.isRunning }

    func warn(_ message: String) {
        core.record { $0.warnings.append(message) }
        core.onDeliveryQueue { [self] in
            if let callback = warning.withLock({ $0 }) {
                callback(message)
            } else {
                Messages.say(message)
            }
        }
    }
}
