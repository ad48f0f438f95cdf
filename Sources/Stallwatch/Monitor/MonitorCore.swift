import CStallwatchShims
import Dispatch
import Foundation
import StallwatchCore
import Synchronization

/// The key that marks monitors' delivery queues (`MonitorCore.drainDeliveries`).
private let deliveryQueueKey = DispatchSpecificKey<ObjectIdentifier>()

/// How often a stall in progress is handed to the listeners with the samples taken so far
/// (`MonitorCore.deliverProgress`): at most this much of a hang's sampling is lost to a kill.
let stallProgressInterval: UInt64 = 500_000_000

/// A monitor's statistics: the counters every monitor keeps (`common`) and its own.
protocol MonitorCounters: Sendable {
    init()
    var common: MonitorStatistics { get set }
}

/// What `StallMonitor` (a `MainLoop`) and `HeartbeatMonitor` (executors it does not own) share:
/// the common configuration, the callbacks and listeners and the queue that delivers to them
/// (symbolicated there, never on the watched thread), the statistics, the sampling signal, and
/// the watchdog thread's start and stop. Each monitor owns one; any thread, unless a method
/// says otherwise.
final class MonitorCore<Statistics: MonitorCounters>: @unchecked Sendable {  // `samplerError`: start() only
    let configuration: MonitorConfiguration
    let symbolicator = Symbolicator.shared
    /// Why stacks cannot be captured, if they cannot (samples then hold only /proc facts). Set by
    /// `installSampler`; read it after `start()`, on the thread that called it.
    private(set) var samplerError: StallMonitor.SamplerError?

    private let callbacks = Locked<(began: (@Sendable (Stall) -> Void)?, ended: (@Sendable (Stall) -> Void)?)>(
        (nil, nil))
    /// Recorders that record the monitor without owning it, by id; called after the callbacks.
    private let listeners = Locked<(next: UInt64, all: [UInt64: @Sendable (Stall, Bool) -> Void])>((1, [:]))
    private let stats = Locked(Statistics())
    private let running = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let delivery: DispatchQueue

    init(configuration: MonitorConfiguration, deliveryLabel: String) {
        self.configuration = configuration
        self.delivery = DispatchQueue(label: deliveryLabel)
        delivery.setSpecific(key: Self.deliveryKey, value: ObjectIdentifier(delivery))
    }

    /// Marks each monitor's delivery queue, so that a call from a callback is known as one.
    private static var deliveryKey: DispatchSpecificKey<ObjectIdentifier> { deliveryQueueKey }

    /// Whether the caller runs on this monitor's delivery queue (inside a callback).
    private var onDeliveryQueue: Bool {
        DispatchQueue.getSpecific(key: Self.deliveryKey) == ObjectIdentifier(delivery)
    }

    /// The monitor's `onStallBegan`.
    var onStallBegan: (@Sendable (Stall) -> Void)? {
        get { callbacks.withLock { $0.began } }
        set { callbacks.withLock { $0.began = newValue } }
    }

    /// The monitor's `onStallEnded`.
    var onStallEnded: (@Sendable (Stall) -> Void)? {
        get { callbacks.withLock { $0.ended } }
        set { callbacks.withLock { $0.ended = newValue } }
    }

    /// Also delivers every stall to `listener` (`true`: it began, `false`: it ended), on the
    /// delivery queue after the callbacks; returns the id to remove it with.
    func addListener(_ listener: @escaping @Sendable (Stall, Bool) -> Void) -> UInt64 {
        listeners.withLock { state in
            defer { state.next += 1 }
            state.all[state.next] = listener
            return state.next
        }
    }

    /// Stops delivering to the listener `id` (after the stalls already queued).
    func removeListener(_ id: UInt64) {
        drainDeliveries()
        _ = listeners.withLock { $0.all.removeValue(forKey: id) }
    }

    /// A snapshot of the counters.
    var statistics: Statistics { stats.withLock { $0 } }

    func record(_ update: (inout Statistics) -> Void) { stats.withLock { update(&$0) } }

    /// Updates the counters every monitor keeps (what `ThreadSampler` counts).
    func recordCommon(_ update: (inout MonitorStatistics) -> Void) { stats.withLock { update(&$0.common) } }

    var isRunning: Bool { running.load(ordering: .acquiring) }

    /// Installs the sampling signal (`configuration.signal`, else SIGRTMIN+4). Throws if someone
    /// else handles it; without libunwind it still succeeds and `samplerError` says why.
    /// `start()` only.
    func installSampler() throws {
        do {
            try Sampler.install(signal: configuration.signal ?? Sampler.defaultSignal)
        } catch {
            guard error.isMissingUnwinder else { throw error }
            samplerError = .unwinderUnavailable(signal: error.signal)
        }
    }

    /// Starts the watchdog thread, `name`d for /proc and debuggers (15 bytes at most), running
    /// `watch` until `stopWatchdog`. `start()` only.
    func startWatchdog(name: String, _ watch: @escaping @Sendable () -> Void) {
        running.store(true, ordering: .releasing)
        let thread = Thread { [finished] in
            sw_set_thread_name(name)
            watch()
            finished.signal()
        }
        thread.start()
    }

    /// Tells the watchdog to finish (`wake` rouses it), and waits until it has; false if it was
    /// not running. Any thread (the watchdog never waits for the delivery queue).
    func stopWatchdog(wake: () -> Void) -> Bool {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return false }
        wake()
        finished.wait()
        return true
    }

    /// Waits for the deliveries queued so far; from a callback (on the delivery queue) it
    /// cannot, and returns: what is queued is delivered after that callback returns. Any thread.
    func drainDeliveries() {
        guard !onDeliveryQueue else { return }
        delivery.sync {}
    }

    /// Runs `work` on the delivery queue, after the stalls queued so far.
    func onDeliveryQueue(_ work: @escaping @Sendable () -> Void) { delivery.async(execute: work) }

    /// Gives the watchdog thread the first scheduling it is allowed (SCHED_FIFO where root or
    /// CAP_SYS_NICE: it only ever sleeps or samples, and RT throttling bounds it anyway), and
    /// counts which. Watchdog thread.
    func raiseWatchdogPriority() {
        let scheduling = StallMonitor.WatchdogScheduling.raiseCurrentThread()
        recordCommon { $0.watchdogScheduling = scheduling }
    }

    /// A stall was detected: by the watchdog's look at `looked`, or earlier by the thread's own
    /// capture past the deadline that is its first sample (`first`); a capture from ahead of the
    /// deadline noticed nothing. `deadline` is the stall's start + budget.
    func recordDetection(first: UInt64, looked: UInt64, deadline: UInt64) {
        recordDetection(at: first >= deadline ? min(first, looked) : looked, deadline: deadline)
    }

    /// A stall was detected at `detected`, `deadline` being start + budget.
    func recordDetection(at detected: UInt64, deadline: UInt64) {
        recordCommon { stats in
            stats.stalls += 1
            stats.detectionLatencyNanos.appendBounded(detected > deadline ? detected - deadline : 0)
        }
    }

    /// Delivers `stall` as begun: flagged `unfinished`, so a recorder can write it at once.
    func deliverBegan(_ stall: Stall) {
        var began = stall
        began.flags.insert(.unfinished)
        deliver(began, began: true)
    }

    /// Hands `stall` to the listeners after a look added samples to it: as begun when they are
    /// its first (and the detection is recorded: `looked` is when the watchdog looked), else
    /// as still running once `stallProgressInterval` passed since `progressed`, its last such
    /// delivery. Watchdog thread.
    func deliverSampled(_ stall: Stall, first: Bool, progressed: inout UInt64, looked: UInt64, budget: UInt64) {
        let latest = stall.samples.last?.time ?? looked
        if first {
            progressed = latest
            recordDetection(
                first: stall.samples.first?.time ?? looked, looked: looked,
                deadline: stall.start.saturatingAdding(budget))
            deliverBegan(stall)
        } else if latest &- progressed >= stallProgressInterval {
            progressed = latest
            deliverProgress(stall)
        }
    }

    /// Hands `stall`, still running, to the listeners (a recorder writes its new samples, so a
    /// hang that ends in a kill keeps them); not to `onStallBegan`, which ran once already.
    func deliverProgress(_ stall: Stall) {
        var running = stall
        running.flags.insert(.unfinished)
        deliver(running, began: true, callback: false)
    }

    /// Delivers `stall` as ended: its tier from its duration, flagged `captureTimedOut` if a
    /// sample's capture was, and counted if `suspended`.
    func deliverEnded(_ stall: Stall) {
        var stall = stall
        if let duration = stall.duration { stall.tier = configuration.tiers.tier(for: duration) ?? .hitch }
        if stall.samples.contains(where: \.captureTimedOut) { stall.flags.insert(.captureTimedOut) }
        if stall.flags.contains(.suspended) { recordCommon { $0.suspendedStalls += 1 } }
        deliver(stall, began: false)
    }

    /// A stall that ended at `end`, before the watchdog looked (it got no CPU meanwhile), with the
    /// watched thread's own `captures` as its samples: counted, then delivered as begun (with its
    /// first sample) and as ended. `deadline` is its start + budget.
    func deliverMissed(_ stall: Stall, captures: [SelfSampler.Capture], deadline: UInt64, end: UInt64) {
        // Detected when the thread took its first capture past the deadline, else now.
        let detected = captures.first?.time ?? sw_monotonic_ns()
        recordDetection(at: detected, deadline: deadline)
        recordCommon { stats in
            stats.missedByWatchdog += 1
            stats.selfSamples += captures.count
            stats.stackSources[.signal, default: 0] += captures.count
            for captured in captures { stats.selfCaptureNanos.appendBounded(captured.unwindNanos) }
        }
        var stall = stall
        stall.samples = captures.map { $0.sample() }
        var began = stall
        began.samples = Array(stall.samples.prefix(1))
        deliverBegan(began)
        stall.end = end
        deliverEnded(stall)
    }

    /// On the delivery queue: symbolicates the samples (their frames, and the lock owner's
    /// stack a sample's facts hold), then calls the callback and the listeners.
    private func deliver(_ stall: Stall, began: Bool, callback calling: Bool = true) {
        delivery.async { [self] in
            var stall = stall
            for index in stall.samples.indices {
                stall.samples[index].frames = symbolicator.symbolicate(frames: stall.samples[index].frames)
                AsyncChain.validated(&stall.samples[index])
                if let frames = stall.samples[index].wait?.owner?.frames, !frames.isEmpty {
                    stall.samples[index].wait?.owner?.frames = symbolicator.symbolicate(frames.map(\.address))
                }
            }
            if calling {
                let callback = callbacks.withLock { began ? $0.began : $0.ended }
                callback?(stall)
            }
            for listener in listeners.withLock({ $0.all.sorted { $0.key < $1.key }.map(\.value) }) {
                listener(stall, began)
            }
        }
    }
}
