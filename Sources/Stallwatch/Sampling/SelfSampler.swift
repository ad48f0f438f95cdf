import CStallwatchSampler
import Glibc
import StallwatchCore

/// The loop thread's own stacks, taken on time by a kernel tick on that thread
/// (`CStallwatchSelfSample`; docs/watchdog.md, "On time without privileges"): the watchdog only
/// collects them, so how late it is scheduled no longer delays detection or capture.
/// Watchdog thread only, but for `enable()` (any thread).
final class SelfSampler: Sendable {
    private let handle: Int32

    private init(handle: Int32) { self.handle = handle }

    /// Opens the ticks on thread `tid`, disabled, for the callouts `clock` publishes: a capture
    /// once a callout has run more than the `configuration`'s budget, then every sampling
    /// interval; its `selfSamplingPeriod` is the shortest time between ticks (the handler sets
    /// each next one). The status says why not when it cannot (perf denied, the signal taken, no
    /// libunwind).
    static func open(
        tid: Int32, clock: UnsafeMutablePointer<sw_callout_clock>, configuration: MonitorConfiguration
    ) -> (SelfSampler?, StallMonitor.SelfSampling) {
        let (period, budget, interval) = (
            configuration.selfSamplingPeriod, configuration.tiers.budget, configuration.sampleInterval
        )
        if let refused = installSignal() { return (nil, refused) }
        let signal = sw_self_default_signal()
        var error: Int32 = 0
        let handle = sw_self_open(
            tid, clock, configuration.selfSamplingTick.kind, Int64(clamping: period.nanoseconds),
            Timebase.shared.cycles(budget.nanoseconds),
            cycles(interval: interval, period: period), max(1, Timebase.shared.cycles(1_000_000)), &error)
        guard handle >= 0 else {
            let reason = describe(handle, signal: signal, errno: error, tick: configuration.selfSamplingTick)
            return (nil, .unavailable(reason: reason))
        }
        return (SelfSampler(handle: handle), .on(period: period, tick: configuration.selfSamplingTick))
    }

    /// Installs the ticks' signal handler (once per process; nil when it is, else why not). A
    /// monitor installs it when it starts, before the threads it watches prepare themselves
    /// (`Sampler.prepareCurrentThread` unblocks the signal only once it is installed). Any thread.
    @discardableResult
    static func installSignal() -> StallMonitor.SelfSampling? {
        if PerfSampler.disabledByEnvironment { return .disabled }
        // ThreadSanitizer defers asynchronous signals to its next interceptor: a tick's handler
        // would run away from where it landed, and its stack would be TSan's own.
        if dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil {
            return .unavailable(reason: "ThreadSanitizer defers signal handlers away from where they land")
        }
        let signal = sw_self_default_signal()
        let installed = sw_self_install(signal)
        guard installed == SW_SAMPLER_OK else {
            return .unavailable(reason: describe(installed, signal: signal, errno: 0, tick: .perfTaskClock))
        }
        return nil
    }

    deinit { sw_self_close(handle) }

    /// Whether the tick handler runs on the thread now (its signal is blocked meanwhile).
    var inHandler: Bool { sw_self_in_handler(handle) != 0 }

    /// Starts the ticks; the thread must have unblocked the signal (`Sampler.prepareCurrentThread`).
    func enable() -> Bool { sw_self_enable(handle) == SW_SAMPLER_OK }

    /// The watchdog samples every `interval` now (it grows for long hangs).
    func follow(interval: Duration, period: Duration) {
        sw_self_set_interval(handle, Self.cycles(interval: interval, period: period))
    }

    /// Captures come two tick periods early, so that the watchdog, waking one interval after its
    /// previous sample, finds one taken since (the tick after a capture falls due comes within
    /// one period of it).
    private static func cycles(interval: Duration, period: Duration) -> UInt64 {
        let (interval, lead) = (interval.nanoseconds, period.nanoseconds.saturatingMultiplied(by: 2))
        return Timebase.shared.cycles(interval > lead ? max(interval / 2, interval - lead) : interval / 2)
    }

    /// A stack the loop thread took of itself.
    struct Capture {
        var addresses: [UInt64]
        /// CLOCK_MONOTONIC at the handler's entry: the instant the stack shows.
        var time: UInt64
        /// The handler's entry → the stack ready.
        var unwindNanos: UInt64
        /// The callout it is of, as the loop's clock showed it then.
        var callout: CalloutSnapshot
        /// The awaiting callers of the async function the thread was in, if it was.
        var chain: AsyncChain? = nil

        /// The sample it is. The thread ran user code to take it (ticks count user time
        /// only): running, in no syscall. `/proc` facts are the watchdog's to add.
        func sample(cpuTimeNanos: UInt64 = 0, annotation: Annotation? = nil) -> Sample {
            let stack = AsyncChain.frames(addresses, chain: chain)
            return Sample(
                time: time, frames: stack.frames, state: .running, syscall: nil,
                wchan: nil, cpuTimeNanos: cpuTimeNanos, annotation: annotation, captureTimedOut: false,
                source: .signal, asyncChainEnd: stack.end)
        }
    }

    /// The stall's first capture (`earliest`) or its newest, of callout `sequence`, taken after
    /// `after`; nil when the ticks took none (the thread was in the kernel, asleep, or preempted).
    func take(sequence: UInt64, earliest: Bool, after: UInt64) -> Capture? {
        var capture = sw_self_capture()
        guard sw_self_take(handle, sequence, earliest ? 1 : 0, Int64(clamping: after), &capture) == 1 else {
            return nil
        }
        let addresses = withUnsafeBytes(of: &capture.frames) { raw in
            raw.bindMemory(to: UInt.self).prefix(Int(capture.frame_count)).map { UInt64($0) }
        }
        let descriptor = CalloutDescriptor(rawValue: capture.descriptor)
        let callout = CalloutSnapshot(
            sequence: capture.sequence, startCycles: capture.start_cycles, kind: descriptor.kind,
            phase: descriptor.phase, mode: descriptor.mode, line: descriptor.line, label: capture.label,
            file: capture.file)
        return Capture(
            addresses: addresses, time: UInt64(capture.time_ns),
            unwindNanos: UInt64(max(0, capture.ready_ns - capture.time_ns)), callout: callout,
            chain: AsyncChain(capture.chain))
    }

    /// Every capture of callout `sequence` taken after `deadline`, oldest first (releasing them
    /// all): what the thread ran past its budget. The capture ahead of the deadline is left out.
    func takeAll(sequence: UInt64, after deadline: UInt64) -> [Capture] {
        var captures: [Capture] = []
        while let next = take(sequence: sequence, earliest: true, after: captures.last?.time ?? deadline) {
            captures.append(next)
        }
        return captures
    }

    /// Ticks taken, stacks captured, stacks dropped (every slot was being read).
    var counters: (ticks: UInt64, captures: UInt64, dropped: UInt64) {
        var stats = sw_self_stats()
        sw_self_get_stats(handle, &stats)
        return (stats.ticks, stats.captures, stats.dropped)
    }

    private static func describe(
        _ code: Int32, signal: Int32, errno: Int32, tick: MonitorConfiguration.SelfSamplingTick
    ) -> String {
        switch code {
        case SW_SELF_EPERF where tick == .threadCPUTimer:
            return "timer_create refused a timer on the thread's CPU clock (\(String(cString: strerror(errno))))"
        case SW_SELF_EPERF:
            let detail = String(cString: strerror(errno))
            return "perf_event_open refused a task-clock event (\(detail); kernel.perf_event_paranoid above 2?)"
        case SW_SELF_EFCNTL: return "cannot route perf overflows to the thread (\(String(cString: strerror(errno))))"
        case SW_SELF_EINUSE: return "signal \(signal) already has a handler"
        case SW_SELF_ENOSLOT: return "all \(SW_SELF_MAX_THREADS) self-sampling threads are in use"
        case SW_SAMPLER_ENOTINSTALLED: return "no stack sampler (libunwind) to share"
        default: return String(cString: sw_sampler_strerror(code))
        }
    }
}
