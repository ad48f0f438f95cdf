import CStallwatchShims
import Dispatch
import Foundation
import StallwatchCore
import Synchronization

/// The stall detector: a watchdog thread that notices any callout of a `MainLoop` that runs
/// longer than the frame budget, samples the loop thread's stack and kernel state until the
/// callout ends, and hands over an exact `Stall` record.
///
/// The loop pays a few atomic stores per callout (no lock, allocation or syscall); the
/// watchdog sleeps until exactly `start + budget` of the callout it saw and does not wake
/// at all while the loop is idle. See docs/watchdog.md.
///
/// Create, set the callbacks, `start()`, and `stop()` from any thread.
public final class StallMonitor: @unchecked Sendable {
    /// How the monitor decides what a stall is and how it samples one: what every monitor is
    /// configured with (`common`, whose fields read and write as this configuration's own:
    /// `configuration.budget`, `configuration.sampleInterval`…), and its tests' hooks.
    @dynamicMemberLookup
    public struct Configuration: Sendable {
        /// The tiers, sampling, signal, perf and self-sampling, as `HeartbeatMonitor`'s.
        public var common = MonitorConfiguration()

        /// Tests: the watchdog gets no CPU for this long when it finds that a stall it timed has
        /// ended, before it reads the end.
        var watchdogLatenessAtStallEndForTesting: Duration = .zero

        /// The defaults: 60 Hz budget, Apple's tiers, 5 ms samples.
        public init() {}

        /// A field of `common`, as this configuration's own.
        public subscript<Value>(dynamicMember field: WritableKeyPath<MonitorConfiguration, Value>) -> Value {
            get { common[keyPath: field] }
            set { common[keyPath: field] = newValue }
        }
    }

    /// What the monitor has seen so far: what every monitor counts (`common`, whose fields read
    /// as this value's own: `statistics.stalls`…), and what only a loop's monitor can.
    @dynamicMemberLookup
    public struct Statistics: Sendable, MonitorCounters {
        /// Stalls, captures, latencies, scheduling and self-sampling, as `HeartbeatMonitor`'s.
        public var common = MonitorStatistics()
        /// Iterations whose callouts together overran the budget though none alone did.
        public var congestedIterations: UInt64 = 0
        /// Overrun callouts the loop logged that the watchdog fell too far behind to read (it
        /// was stopped for longer than 64 stalls): stalls lost, 0 in any healthy run.
        public var lostOverruns = 0

        /// All zero.
        public init() {}

        /// A field of `common`, as this value's own.
        public subscript<Value>(dynamicMember field: WritableKeyPath<MonitorStatistics, Value>) -> Value {
            get { common[keyPath: field] }
            set { common[keyPath: field] = newValue }
        }
    }

    /// Whether the loop thread samples itself. A plain value; any thread.
    public enum SelfSampling: Sendable, Hashable, CustomStringConvertible {
        /// Ticks on the loop thread's CPU time from `tick`, down to `period` apart (the scheduler
        /// tick's granularity for `.threadCPUTimer`).
        case on(period: Duration, tick: MonitorConfiguration.SelfSamplingTick)
        /// Turned off (`Configuration.selfSampling`, or `STALLWATCH_PERF=0`).
        case disabled
        /// Wanted but not possible here: why (perf denied, the signal taken, no libunwind).
        case unavailable(reason: String)

        /// "on (perf task clock, ticks down to 500 us)", "on (thread CPU timer, ticks down to
        /// 500 us)", "disabled" or "unavailable: …".
        public var description: String {
            switch self {
            case .on(let period, let tick): "on (\(tick), ticks down to \(period.nanoseconds / 1000) us)"
            case .disabled: "disabled"
            case .unavailable(let reason): "unavailable: \(reason)"
            }
        }
    }

    /// The scheduling the watchdog thread got: it asks for the first it is allowed. A plain
    /// value; any thread.
    public enum WatchdogScheduling: Sendable, Hashable, CustomStringConvertible {
        /// Real-time, `SCHED_FIFO` priority 1 (root or `CAP_SYS_NICE`).
        case realTime
        /// The normal policy with nice −10 (`CAP_SYS_NICE` or a permissive `RLIMIT_NICE`).
        case raisedNice
        /// The normal policy with a 100 µs slice (EEVDF's `sched_runtime`, Linux 6.12+, any
        /// user): on wake-up it preempts a CPU-bound task sooner.
        case shortSlice
        /// As the thread was created.
        case normal

        /// "SCHED_FIFO 1", "nice -10", "slice 100 us" or "normal".
        public var description: String {
            switch self {
            case .realTime: "SCHED_FIFO 1"
            case .raisedNice: "nice -10"
            case .shortSlice: "slice 100 us"
            case .normal: "normal"
            }
        }
    }

    /// Why the monitor cannot capture stacks (its samples then hold only /proc facts). A plain
    /// value; any thread.
    public enum SamplerError: Error, Sendable, Hashable, CustomStringConvertible {
        /// libunwind (`libunwind.so.8`) could not be loaded, or lacks `unw_backtrace`; the
        /// sampling signal was `signal`.
        case unwinderUnavailable(signal: Int32)

        /// The sampler's explanation, e.g. "cannot install the sampling signal 38: cannot load
        /// libunwind.so.8 or resolve unw_backtrace".
        public var description: String {
            switch self {
            case .unwinderUnavailable(let signal):
                Sampler.InstallError(code: Sampler.missingUnwinderCode, signal: signal).description
            }
        }
    }

    /// The loop watched.
    public let loop: MainLoop
    /// The configuration it was created with.
    public let configuration: Configuration

    /// The callbacks, statistics, delivery and watchdog thread, as `HeartbeatMonitor`'s.
    let core: MonitorCore<Statistics>
    var symbolicator: Symbolicator { core.symbolicator }
    /// Why stacks cannot be captured, if they cannot (samples then hold only /proc facts). Read
    /// it after `start()`, on the thread that called it.
    public var samplerError: SamplerError? { core.samplerError }
    /// The loop thread's own ticks (set by `start()` before the watchdog starts, cleared by
    /// `stop()` after it finished).
    private(set) var selfSampler: SelfSampler?

    /// A monitor for `loop` (the main loop by default). Any thread.
    public init(loop: MainLoop = .main, configuration: Configuration = Configuration()) {
        self.loop = loop
        self.configuration = configuration
        self.core = MonitorCore(configuration: configuration.common, deliveryLabel: "stallwatch.monitor.delivery")
    }

    /// Called as soon as a stall is detected (before it ends), with its first sample, so a
    /// recorder can write it even if the process is then killed. Runs on the monitor's
    /// delivery queue, never on the loop thread. Set before `start()`.
    public var onStallBegan: (@Sendable (Stall) -> Void)? {
        get { core.onStallBegan }
        set { core.onStallBegan = newValue }
    }

    /// Called when a stall has ended, with its exact duration, all samples (symbolicated) and
    /// flags. Runs on the monitor's delivery queue, never on the loop thread.
    public var onStallEnded: (@Sendable (Stall) -> Void)? {
        get { core.onStallEnded }
        set { core.onStallEnded = newValue }
    }

    /// Also delivers every stall to `listener` (`true`: it began, `false`: it ended), on the
    /// delivery queue after the callbacks; returns the id to remove it with. Any thread.
    func addListener(_ listener: @escaping @Sendable (Stall, Bool) -> Void) -> UInt64 { core.addListener(listener) }

    /// Stops delivering to the listener `id` (after the stalls already queued). Any thread.
    func removeListener(_ id: UInt64) { core.removeListener(id) }

    /// The monitor watching `loop` now, if any. Any thread.
    static func watching(_ loop: MainLoop) -> StallMonitor? {
        loop.board.monitor.withLock { $0.value as? StallMonitor }
    }

    /// A snapshot of the counters. Any thread.
    public var statistics: Statistics {
        var snapshot = core.statistics
        snapshot.congestedIterations = loop.board.congestedIterations.load(ordering: .relaxed)
        return snapshot
    }

    /// Starts watching. Any thread. Throws if the sampling signal is taken by someone else;
    /// if libunwind cannot be loaded, the monitor still runs and `samplerError` says why.
    public func start() throws {
        require(!core.isRunning, "StallMonitor.start called twice")
        PreloadYield.yield()  // a preloaded heartbeat monitor frees the sampling signal
        // Enablement never crashes the app: a monitor that STALLWATCH_TRACE started gives way,
        // and its recorder goes on recording this one once it runs.
        var handedOver: TraceRecorder?
        if loop.board.monitorAttached.load(ordering: .acquiring) {
            handedOver = TraceRecorder.yieldEnvironmentRecorder(of: loop)
        }
        defer { handedOver?.adopt(self) }
        require(
            !loop.board.monitorAttached.exchange(true, ordering: .acquiringAndReleasing),
            "another StallMonitor watches this loop")
        do {
            try core.installSampler()
        } catch {
            loop.board.monitorAttached.store(false, ordering: .releasing)
            throw error
        }
        openSelfSampler()
        // The loop thread must unblock the signals itself; it also does so when it first runs.
        // Its ticks start once it has.
        let own = selfSampler
        let prepare: @Sendable () -> Void = {
            Sampler.prepareCurrentThread()
            _ = own?.enable()
        }
        if loop.isCurrent { prepare() } else { loop.post(prepare) }
        loop.board.budgetCycles.store(
            Timebase.shared.cycles(configuration.tiers.budget.nanoseconds), ordering: .relaxed)
        // From here every callout that overruns is logged by the loop, whenever the watchdog
        // comes to read it.
        let overruns = loop.board.overruns.end
        // A callout already running (this very start() may be inside one) belongs to whoever
        // watched it begin: this monitor's stalls begin from here.
        let since = sw_cycles()
        loop.board.enabled.store(true, ordering: .releasing)
        let armed = DispatchSemaphore(value: 0)
        core.startWatchdog(name: "stallwatchdog") { [self] in watch(overruns: overruns, since: since, armed: armed) }
        // Returns once the watchdog can time a stall, so one that begins now is sampled too.
        armed.wait()
        loop.board.monitor.withLock { $0.value = self }
    }

    /// Stops watching and waits for the watchdog to finish (a stall in progress is delivered
    /// as unfinished). Any thread, a callback of the monitor's included (it then does not wait
    /// for the deliveries queued after that callback).
    public func stop() {
        let board = loop.board
        guard
            core.stopWatchdog(wake: {
                board.enabled.store(false, ordering: .releasing)
                board.watchdogWake.signal()
            })
        else { return }
        loop.board.budgetCycles.store(UInt64.max, ordering: .relaxed)
        selfSampler = nil
        loop.board.monitor.withLock { if $0.value === self { $0.value = nil } }
        loop.board.monitorAttached.store(false, ordering: .releasing)
        core.drainDeliveries()
    }

    /// The loop thread's own ticks, when wanted and possible (`statistics.selfSampling` says).
    private func openSelfSampler() {
        guard configuration.selfSampling else {
            core.recordCommon { $0.selfSampling = .disabled }
            return
        }
        let (sampler, status) = SelfSampler.open(
            tid: loop.threadID, clock: loop.board.clock, configuration: configuration.common)
        selfSampler = sampler
        core.recordCommon { $0.selfSampling = status }
    }

    deinit { stop() }

    var isRunning: Bool { core.isRunning }
}
