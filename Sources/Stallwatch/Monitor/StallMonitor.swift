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
    /// How the monitor decides what a stall is and how it samples one.
    public struct Configuration: Sendable {
        /// The budget and the tier thresholds; a callout longer than `tiers.budget` is a stall.
        public var tiers = TierThresholds()
        /// Time between samples of a stall; it grows for long hangs (×4 after 250 ms, ×20
        /// after 1 s).
        public var sampleInterval: Duration = .milliseconds(5)
        /// Samples kept per stall at most; the stall is still timed to its end.
        public var maxSamplesPerStall = 200
        /// The real-time signal used to interrupt the loop thread (nil: SIGRTMIN+4). It must be
        /// free: `start()` refuses a signal someone else handles.
        public var signal: Int32? = nil
        /// How long one stack capture may wait for the loop thread to run the handler (a
        /// thread in state D cannot until its syscall returns).
        public var captureTimeout: Duration = .milliseconds(5)
        /// A watchdog that oversleeps by more than this was stopped (SIGSTOP, a debugger): the
        /// stall it then sees is flagged `suspended`.
        public var suspendThreshold: Duration = .milliseconds(50)
        /// Whether stacks the signal cannot take (a thread inside a long read or write) come from
        /// a perf_event sample of the thread's user stack, enabled only during stalls. The
        /// environment variable `STALLWATCH_PERF=0` turns it off too.
        public var perfSampling = true
        /// Whether the loop thread samples itself on time: a perf task-clock tick on its user-mode
        /// CPU time lets its own handler take the stack of a callout past its budget, however late
        /// the watchdog is scheduled (docs/watchdog.md, "On time without privileges").
        /// `STALLWATCH_PERF=0` turns it off too. On by default; where it cannot run (perf
        /// refused, ThreadSanitizer, no libunwind), `statistics.selfSampling` says why. While it
        /// runs, the watchdog never signals the loop thread (docs/watchdog.md).
        public var selfSampling = true
        /// The finest tick, in the loop thread's user-mode CPU time: the tick after a deadline
        /// comes within about this much of it. Away from deadlines the handler spaces its ticks
        /// out (about two per budget for a loop of short callouts); an idle loop takes none.
        public var selfSamplingPeriod: Duration = .microseconds(500)

        /// Tests: the watchdog gets no CPU for this long after it first sees each callout, as an
        /// unprivileged watchdog on a busy machine may wait for one.
        var watchdogLatenessForTesting: Duration = .zero
        /// Tests: the watchdog gets no CPU for this long when it finds that a stall it timed has
        /// ended, before it reads the end.
        var watchdogLatenessAtStallEndForTesting: Duration = .zero

        /// The frame budget (1/60 s by default).
        public var budget: Duration {
            get { tiers.budget }
            set { tiers.budget = newValue }
        }

        /// The defaults: 60 Hz budget, Apple's tiers, 5 ms samples.
        public init() {}
    }

    /// What the monitor has seen so far.
    public struct Statistics: Sendable {
        /// Stalls detected (suspended ones included).
        public var stalls = 0
        /// Stalls flagged `suspended` (the process was stopped during them).
        public var suspendedStalls = 0
        /// Iterations whose callouts together overran the budget though none alone did.
        public var congestedIterations: UInt64 = 0
        /// Stack captures attempted.
        public var captures = 0
        /// Captures whose handler did not run within `captureTimeout` (state D, signal blocked).
        public var captureTimeouts = 0
        /// Signal sent → stack ready, for the last captures (ns, at most 4096 kept).
        public var captureLatencyNanos: [UInt64] = []
        /// Budget expiry → first sample taken, for the last stalls (ns, at most 4096 kept).
        public var detectionLatencyNanos: [UInt64] = []
        /// How the watchdog thread is scheduled (`description`: "SCHED_FIFO 1", "nice -10",
        /// "slice 100 us" or "normal").
        public var watchdogScheduling = WatchdogScheduling.normal
        /// How the perf path runs (set once the watchdog thread has started).
        public var perfSampling = PerfSampling.disabled
        /// Samples taken, by where their stack came from.
        public var stackSources: [SampleSource: Int] = [:]
        /// Time to unwind a perf sample's stack copy on the watchdog, for the last ones (ns, at
        /// most 4096 kept).
        public var perfUnwindNanos: [UInt64] = []
        /// Whether the loop thread samples itself (set once `start()` returned).
        public var selfSampling = SelfSampling.disabled
        /// Samples whose stack the loop thread took of itself (counted in `stackSources` as
        /// `signal`: the same handler-side unwind, triggered by the kernel's tick).
        public var selfSamples = 0
        /// Handler entry → stack ready for those samples (ns, at most 4096 kept).
        public var selfCaptureNanos: [UInt64] = []
        /// Stalls that ended before the watchdog looked (it got no CPU meanwhile): recorded from
        /// the loop's own stamps, with the loop thread's own captures as samples, if any
        /// (counted in `stalls` too).
        public var missedByWatchdog = 0
        /// Overrun callouts the loop logged that the watchdog fell too far behind to read (it
        /// was stopped for longer than 64 stalls): stalls lost, 0 in any healthy run.
        public var lostOverruns = 0
    }

    /// Whether the loop thread samples itself. A plain value; any thread.
    public enum SelfSampling: Sendable, Hashable, CustomStringConvertible {
        /// Ticks on the loop thread's user-mode CPU time, down to `period` apart.
        case on(period: Duration)
        /// Turned off (`Configuration.selfSampling`, or `STALLWATCH_PERF=0`).
        case disabled
        /// Wanted but not possible here: why (perf denied, the signal taken, no libunwind).
        case unavailable(reason: String)

        /// "on (ticks down to 500 us)", "disabled" or "unavailable: …".
        public var description: String {
            switch self {
            case .on(let period): "on (ticks down to \(period.nanoseconds / 1000) us)"
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

    private let callbacks = Locked<(began: (@Sendable (Stall) -> Void)?, ended: (@Sendable (Stall) -> Void)?)>(
        (nil, nil))
    /// Recorders that record this monitor without owning it (the environment's, when the app
    /// runs its own monitor), by id; called after the callbacks.
    private let listeners = Locked<(next: UInt64, all: [UInt64: @Sendable (Stall, Bool) -> Void])>((1, [:]))
    private let stats = Locked(Statistics())
    private let running = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let delivery = DispatchQueue(label: "stallwatch.monitor.delivery")
    let symbolicator: Symbolicator
    /// Why stacks cannot be captured, if they cannot (samples then hold only /proc facts). Read
    /// it after `start()`, on the thread that called it.
    public private(set) var samplerError: SamplerError?
    /// The loop thread's own ticks (set by `start()` before the watchdog starts, cleared by
    /// `stop()` after it finished).
    private(set) var selfSampler: SelfSampler?

    /// A monitor for `loop` (the main loop by default). Any thread.
    public init(loop: MainLoop = .main, configuration: Configuration = Configuration()) {
        self.loop = loop
        self.configuration = configuration
        self.symbolicator = Symbolicator.shared
    }

    /// Called as soon as a stall is detected (before it ends), with its first sample, so a
    /// recorder can write it even if the process is then killed. Runs on the monitor's
    /// delivery queue, never on the loop thread. Set before `start()`.
    public var onStallBegan: (@Sendable (Stall) -> Void)? {
        get { callbacks.withLock { $0.began } }
        set { callbacks.withLock { $0.began = newValue } }
    }

    /// Called when a stall has ended, with its exact duration, all samples (symbolicated) and
    /// flags. Runs on the monitor's delivery queue, never on the loop thread.
    public var onStallEnded: (@Sendable (Stall) -> Void)? {
        get { callbacks.withLock { $0.ended } }
        set { callbacks.withLock { $0.ended = newValue } }
    }

    /// Also delivers every stall to `listener` (`true`: it began, `false`: it ended), on the
    /// delivery queue after the callbacks; returns the id to remove it with. Any thread.
    func addListener(_ listener: @escaping @Sendable (Stall, Bool) -> Void) -> UInt64 {
        listeners.withLock { state in
            defer { state.next += 1 }
            state.all[state.next] = listener
            return state.next
        }
    }

    /// Stops delivering to the listener `id` (after the stalls already queued). Any thread.
    func removeListener(_ id: UInt64) {
        delivery.sync {}
        _ = listeners.withLock { $0.all.removeValue(forKey: id) }
    }

    /// The monitor watching `loop` now, if any. Any thread.
    static func watching(_ loop: MainLoop) -> StallMonitor? { loop.board.monitor.withLock { $0.value } }

    /// A snapshot of the counters. Any thread.
    public var statistics: Statistics {
        var snapshot = stats.withLock { $0 }
        snapshot.congestedIterations = loop.board.congestedIterations.load(ordering: .relaxed)
        return snapshot
    }

    /// Starts watching. Any thread. Throws if the sampling signal is taken by someone else;
    /// if libunwind cannot be loaded, the monitor still runs and `samplerError` says why.
    public func start() throws {
        precondition(!running.load(ordering: .acquiring), "StallMonitor.start called twice")
        PreloadYield.yield()  // a preloaded heartbeat monitor frees the sampling signal
        // Enablement never crashes the app: a monitor that STALLWATCH_TRACE started gives way,
        // and its recorder goes on recording this one once it runs.
        var handedOver: TraceRecorder?
        if loop.board.monitorAttached.load(ordering: .acquiring) {
            handedOver = TraceRecorder.yieldEnvironmentRecorder(of: loop)
        }
        defer { handedOver?.adopt(self) }
        precondition(
            !loop.board.monitorAttached.exchange(true, ordering: .acquiringAndReleasing),
            "another StallMonitor watches this loop")
        let signal = configuration.signal ?? Sampler.defaultSignal
        do {
            try Sampler.install(signal: signal)
        } catch let error where error.isMissingUnwinder {
            samplerError = .unwinderUnavailable(signal: error.signal)
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
        running.store(true, ordering: .releasing)
        let armed = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            // Named for /proc and debuggers (15 bytes at most).
            sw_set_thread_name("stallwatchdog")
            watch(overruns: overruns, since: since, armed: armed)
            finished.signal()
        }
        thread.start()
        // Returns once the watchdog can time a stall, so one that begins now is sampled too.
        armed.wait()
        loop.board.monitor.withLock { $0.value = self }
    }

    /// Stops watching and waits for the watchdog to finish (a stall in progress is delivered
    /// as unfinished). Any thread but the delivery queue.
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        loop.board.enabled.store(false, ordering: .releasing)
        loop.board.watchdogWake.signal()
        finished.wait()
        loop.board.budgetCycles.store(UInt64.max, ordering: .relaxed)
        selfSampler = nil
        loop.board.monitor.withLock { if $0.value === self { $0.value = nil } }
        loop.board.monitorAttached.store(false, ordering: .releasing)
        delivery.sync {}
    }

    /// The loop thread's own ticks, when wanted and possible (`statistics.selfSampling` says).
    private func openSelfSampler() {
        guard configuration.selfSampling else {
            record { $0.selfSampling = .disabled }
            return
        }
        let (sampler, status) = SelfSampler.open(
            tid: loop.threadID, clock: loop.board.clock, period: configuration.selfSamplingPeriod,
            budget: configuration.tiers.budget, interval: configuration.sampleInterval)
        selfSampler = sampler
        record { $0.selfSampling = status }
    }

    deinit { stop() }

    var isRunning: Bool { running.load(ordering: .acquiring) }

    func record(_ update: (inout Statistics) -> Void) { stats.withLock { update(&$0) } }

    func deliver(_ stall: Stall, began: Bool) {
        delivery.async { [self] in
            var stall = stall
            for index in stall.samples.indices {
                stall.samples[index].frames = symbolicator.symbolicate(stall.samples[index].frames.map(\.address))
                symbolicateFacts(&stall.samples[index])
            }
            let callback = callbacks.withLock { began ? $0.began : $0.ended }
            callback?(stall)
            for listener in listeners.withLock({ $0.all.sorted { $0.key < $1.key }.map(\.value) }) {
                listener(stall, began)
            }
        }
    }
}
