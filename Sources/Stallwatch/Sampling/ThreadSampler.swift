import CStallwatchShims
import Glibc
import StallwatchCore

/// One sample of a watched thread — /proc facts, then its stack from the first source that gives
/// one (docs/watchdog.md, "Where a sample's stack comes from"), then the innermost annotation,
/// the kernel counters and the wait-for fact (`SampleFacts`).
/// Shared by `StallMonitor` (the `MainLoop` thread) and `HeartbeatMonitor` (any executor's
/// thread, learned from a heartbeat). Watchdog thread only.
struct ThreadSampler {
    let tid: Int32
    let reader: ThreadStateReader
    /// The stack sources and what this stall has captured so far.
    let stacks: StackCapture
    /// How long one capture may wait for the handler.
    let captureTimeout: Duration
    /// False when libunwind cannot be loaded: samples then hold only /proc facts.
    let canCapture: Bool
    /// The thread's annotation scopes, if it has any.
    let annotations: AnnotationScopes?

    /// The thread's own ticks and their period.
    let own: (sampler: SelfSampler, period: Duration)?
    /// The counters and wait-for facts added to each sample.
    let facts: SampleFacts
    /// The look number of the samples taken from now on (`look`).
    private let lookNumber = LookNumber()

    /// A sampler of thread `tid` with the monitor's `configuration` (capture timeout, sampling
    /// interval, tick period); `usePerf` opens a perf event on it (enabled only during a stall,
    /// `beginStall` to `endStall`) with a period following the sampling interval. With `own`,
    /// the thread's own captures come first. `faultAddresses` attaches perf's page-fault event
    /// to the thread for good (it names a faulting read's mapped file): right for a UI loop, not
    /// for threads that switch at every request, which it would cost at every switch.
    init(
        tid: Int32, configuration: MonitorConfiguration, canCapture: Bool, annotations: AnnotationScopes?,
        usePerf: Bool = false, own: SelfSampler? = nil, faultAddresses: Bool = false
    ) {
        self.tid = tid
        self.reader = ThreadStateReader(tid: tid)
        self.stacks = StackCapture(
            tid: tid, usePerf: usePerf, sampleInterval: configuration.sampleInterval.nanoseconds)
        self.captureTimeout = configuration.captureTimeout
        self.canCapture = canCapture
        self.annotations = annotations
        self.own = own.map { (sampler: $0, period: configuration.selfSamplingPeriod) }
        self.facts = SampleFacts(
            tid: tid, statements: annotations?.statement, reader: reader, stacks: stacks, faultAddresses: faultAddresses
        )
    }

    /// The watchdog saw loop callout `sequence` running and will sleep to its deadline: the
    /// reading the first sample's counter delta starts from, should it stall.
    func sawCallout(_ sequence: UInt64) { facts.sawCallout(sequence) }

    /// A stall of callout `sequence` (the loop's clock; nil for an executor) was detected:
    /// forget the last one's stacks and facts; perf starts with the first capture.
    func beginStall(sequence: UInt64? = nil) {
        stacks.beginStall(sequence: sequence)
        facts.beginStall(sequence)
    }

    /// The stall ended: perf sampling stops.
    func endStall() {
        stacks.endStall()
        facts.endStall()
    }

    /// The watchdog samples every `interval` now (it grows for long hangs).
    func follow(interval: UInt64) {
        stacks.follow(interval: interval)
        if let own { own.sampler.follow(interval: .nanoseconds(interval), period: own.period) }
    }

    /// The look the next samples are taken at, shared with the other threads sampled then (the
    /// pool sets it before each look, `HeartbeatMonitor.stepPool`); nil, as a sampler starts:
    /// each sample is a look of its own.
    var look: UInt32? {
        get { lookNumber.value }
        nonmutating set { lookNumber.value = newValue }
    }

    /// One sample of thread `tid` at `look`: the thread's own capture since the previous sample if
    /// it took one, else /proc first (a signal would disturb the syscall it reports), then the
    /// stack; with the kernel counters and the wait-for fact. `record` receives the capture
    /// counters.
    func sample(record: ((inout MonitorStatistics) -> Void) -> Void) -> Sample {
        var sample = facts.sample { stackSample(record: record) }
        sample.tid = tid
        sample.look = look
        return sample
    }

    private func stackSample(record: ((inout MonitorStatistics) -> Void) -> Void) -> Sample {
        let time = sw_monotonic_ns()
        stacks.perfSyscallArgument = nil
        var kernel = reader.read()
        if let captured = ownCapture() ?? awaitOwnCapture(kernel) {
            stacks.remember(captured.addresses, from: .signal, chain: captured.chain)
            stacks.ownWaitFailed = false
            stacks.lastSampleTime = time
            record { stats in
                stats.selfSamples += 1
                stats.stackSources[.signal, default: 0] += 1
                stats.selfCaptureNanos.appendBounded(captured.unwindNanos)
            }
            return captured.sample(cpuTimeNanos: kernel.cpuTimeNanos, annotation: annotations?.innermost())
        }
        let stack = captureStack(kernel: &kernel, time: time, record: record)
        let frames = AsyncChain.frames(stack.addresses, chain: stack.chain)
        return Sample(
            time: time, frames: frames.frames, state: kernel.state,
            syscall: kernel.syscall, wchan: kernel.wchan, cpuTimeNanos: kernel.cpuTimeNanos,
            annotation: annotations?.innermost(), captureTimedOut: stack.timedOut, source: stack.source,
            asyncChainEnd: frames.end)
    }

    /// The stall's first own capture for its first sample, else the newest since the previous
    /// sample (whose time `stacks.ownAfter` keeps, so samples stay in time order).
    private func ownCapture() -> SelfSampler.Capture? {
        guard let own, let sequence = stacks.stallSequence else { return nil }
        let earliest = stacks.ownAfter == 0
        guard let captured = own.sampler.take(sequence: sequence, earliest: earliest, after: stacks.ownAfter)
        else { return nil }
        stacks.ownAfter = captured.time
        return captured
    }

    /// A gap in the watchdog's own time longer than this was the process being stopped (as
    /// `MonitorConfiguration.suspendThreshold`'s default).
    static let stoppedGap: UInt64 = 50_000_000

    /// When the process was stopped while a sample waited, if it was (and forgets it).
    func takeStoppedGap() -> ClosedRange<UInt64>? {
        defer { stacks.stoppedDuring = nil }
        return stacks.stoppedDuring
    }

    /// With self-sampling, the watchdog never signals the thread: a signal that lands after the
    /// thread moved on from the stalled code (the watchdog is late, the thread was preempted) can
    /// land in the next callout's `nanosleep` or `epoll_wait`, which then returns early with
    /// EINTR — the app's own sleep cut short. A thread that may be running user code (no syscall
    /// in /proc) takes its own stack within a tick period of CPU time instead: wait for it, up to
    /// `captureTimeout`; after one wait in vain (the thread is inside a long call, or gets no
    /// CPU), not again until an own capture arrives.
    private func awaitOwnCapture(_ kernel: ThreadStateReader.Reading) -> SelfSampler.Capture? {
        guard let own, stacks.stallSequence != nil, kernel.syscall == nil, !stacks.ownWaitFailed else { return nil }
        var last = sw_monotonic_ns()
        let until = last.saturatingAdding(captureTimeout.nanoseconds)
        // Polled at half a tick period (the capture's own time is the sample's: the poll's delay
        // costs the watchdog, not the sample's accuracy).
        let step = UInt32(max(50, min(own.period.nanoseconds / 2_000, 1_000)))
        while sw_monotonic_ns() < until {
            usleep(step)
            // A nap far longer than asked: the process was stopped meanwhile (SIGSTOP), which
            // the stall it samples must say (as the watchdog's own sleeps notice).
            let now = sw_monotonic_ns()
            if now &- last > UInt64(step) * 1_000 &+ Self.stoppedGap { stacks.stoppedDuring = last...now }
            last = now
            if let captured = ownCapture() { return captured }
        }
        stacks.ownWaitFailed = true
        return nil
    }

    /// The stack for a sample taken at `time`, after `kernel` was read: the first source that
    /// gives one. May re-read `kernel` (a running thread that missed the signal was in the kernel).
    private func captureStack(
        kernel: inout ThreadStateReader.Reading, time: UInt64,
        record: ((inout MonitorStatistics) -> Void) -> Void
    ) -> (addresses: [UInt64], source: SampleSource, timedOut: Bool, chain: AsyncChain?) {
        stacks.enableIfPending()
        defer {
            stacks.lastSampleTime = time
            stacks.ownAfter = max(stacks.ownAfter, time)
        }
        func finish(
            _ addresses: [UInt64], _ source: SampleSource, timedOut: Bool, perf: PerfSampler.Stack? = nil,
            chain: AsyncChain? = nil
        ) -> (addresses: [UInt64], source: SampleSource, timedOut: Bool, chain: AsyncChain?) {
            let chain = chain ?? perf?.chain
            if let perf {
                stacks.inKernelPerPerf = perf.inKernel
                stacks.perfSyscallArgument = perf.syscallArgument
                record { $0.perfUnwindNanos.appendBounded(UInt64(max(0, perf.unwindNanos))) }
            }
            stacks.remember(addresses, from: source, chain: chain)
            record { $0.stackSources[source, default: 0] += 1 }
            return (addresses, source, timedOut, chain)
        }
        var timedOut = false
        // Self-sampling, unless the thread blocks the ticks' signal (then it is signalled as
        // without them): asked of /proc only once a wait for its own capture was in vain.
        let selfSampling =
            own.map { !(stacks.ownWaitFailed && stacks.ticksBlocked(tid: tid, own: $0.sampler)) } ?? false
        // 1. Blocked in a call a signal would end early (EINTR): read the stack, never signal.
        if let call = kernel.syscall, StackScanner.neverRestarted.contains(call) {
            let scanned = stacks.scanner.scan()
            return finish(
                scanned, scanned.isEmpty ? .none : .scan, timedOut: false, chain: stacks.scanner.lastChain)
        }
        // 2. perf first while the thread sits in the kernel (its newest perf sample says so).
        //    No perf sample since the last one means the thread got less than a perf period of
        //    CPU since: still in the same call, or waiting for a CPU. A signal would only wait
        //    out its timeout, so skip it.
        var perfStack: PerfSampler.Stack?
        var stillInKernel = false
        if stacks.inKernelPerPerf {
            if let fresh = stacks.perf?.latest(notBefore: stacks.lastSampleTime) {
                if fresh.inKernel { return finish(fresh.addresses, .perf, timedOut: false, perf: fresh) }
                stacks.inKernelPerPerf = false
                perfStack = fresh
            } else {
                stillInKernel = true
            }
        }
        // 3. The signal. A thread in state D cannot run the handler until its syscall returns;
        //    after one timeout, do not queue more signals while it stays there.
        if stillInKernel {
            timedOut = stacks.lastTimedOut
        } else if selfSampling {
            // Self-sampling: no signal (see `awaitOwnCapture`); the wait for the thread's own
            // capture was in vain, or there was none to wait for.
            timedOut = stacks.ownWaitFailed
        } else if canCapture && !(kernel.state == .diskSleep && stacks.lastTimedOut) {
            // The sample's /proc reading is as old as the work since (perf attached, the mask
            // read: up to a few hundred microseconds), long enough for the thread to enter a
            // sleep a signal would end early: read again just before signalling.
            let now = reader.read()
            if let call = now.syscall, StackScanner.neverRestarted.contains(call) {
                kernel = now
                let scanned = stacks.scanner.scan()
                return finish(
                    scanned, scanned.isEmpty ? .none : .scan, timedOut: false, chain: stacks.scanner.lastChain)
            }
            let capture = Sampler.capture(tid: tid, timeoutNanos: Int64(clamping: captureTimeout.nanoseconds))
            record { stats in
                stats.captures += 1
                if capture.timedOut {
                    stats.captureTimeouts += 1
                } else {
                    stats.captureLatencyNanos.appendBounded(UInt64(max(0, capture.readyNanos - capture.sentNanos)))
                }
            }
            stacks.lastTimedOut = capture.timedOut
            if !capture.timedOut { return finish(capture.addresses, .signal, timedOut: false, chain: capture.chain) }
            timedOut = true
            // "running" says only that the thread was on a CPU, user or kernel. A running thread
            // that did not take the signal within the timeout was in the kernel all along (a
            // long write, page-cache throttling): read /proc again for what it waits in now.
            if kernel.syscall == nil {
                let again = reader.read()
                if again.syscall != nil { kernel = again }
            }
        } else {
            timedOut = true
        }
        // 4. perf: the newest sample since the previous one (taken while the signal waited).
        if let fresh = perfStack ?? stacks.perf?.latest(notBefore: stacks.lastSampleTime) {
            return finish(fresh.addresses, .perf, timedOut: timedOut, perf: fresh)
        }
        // 5. Caught blocked in a syscall or a page fault (-1): scan the stack /proc points at.
        if kernel.syscall != nil {
            let scanned = stacks.scanner.scan()
            if !scanned.isEmpty {
                return finish(scanned, .scan, timedOut: timedOut, chain: stacks.scanner.lastChain)
            }
        }
        // 6. The last stack of this stall, flagged stale; else none.
        if !stacks.lastStack.isEmpty {
            return finish(stacks.lastStack, .stale, timedOut: timedOut, chain: stacks.lastChain)
        }
        return finish([], .none, timedOut: timedOut)
    }
}

/// How much of a stall ran inside an `expectLong` scope, from the scopes' own start and end
/// times (`AnnotationScopes.expectedSpans`), read at each sample and once more as the stall
/// ends. A stall is expected only if its time outside such scopes is at most the budget: a short
/// scope early in a long stall excuses none of it, and a scope the stall outlives by less than a
/// frame still excuses all of it. The times are the loop thread's, so a watchdog that first
/// looks after the scope ended still sees it. The watchdog thread's, one per stall in progress.
struct ExpectedScopeTally {
    /// The thread's scopes (the sampler's, as the stall's samples are taken).
    private var scopes: AnnotationScopes?
    /// The expected-long scopes seen, by start; for one last seen open, `until` is when it was.
    private var spans: [AnnotationScopes.ExpectedSpan] = []
    /// Whether `spans.last` was open when last read.
    private var lastOpen = false

    init(scopes: AnnotationScopes? = nil) {
        self.scopes = scopes
    }

    /// Notes the scopes `sampler`'s thread is in as its latest sample of `stall` was taken;
    /// sets the stall's `expected` to the first scope seen in the stall (what a trace keeps if
    /// the process dies in the stall).
    mutating func note(_ sampler: ThreadSampler, _ stall: inout Stall) {
        if let annotations = sampler.annotations { scopes = annotations }
        look(now: sw_monotonic_ns())
        stall.expected = reason(from: stall.start, to: .max)
    }

    /// Settles `stall.expected` once it ended (at `stall.end`, else now): the first scope in it,
    /// or nil if its time outside every scope seen passed `budget`.
    mutating func settle(_ stall: inout Stall, budget: UInt64) {
        let now = sw_monotonic_ns()
        look(now: now)
        let end = max(stall.end ?? now, stall.start)
        // A scope still open as the stall ends covers it to its end.
        if lastOpen { spans[spans.count - 1].until = max(spans[spans.count - 1].until, end) }
        guard let reason = reason(from: stall.start, to: end) else {
            stall.expected = nil
            return
        }
        var covered: UInt64 = 0
        var reached = stall.start
        for span in spans {
            let from = max(span.since, reached)
            let to = min(span.until, end)
            if to > from { covered += to - from }
            reached = max(reached, to)
        }
        stall.expected = end - stall.start - covered <= budget ? reason : nil
    }

    /// Reads the scopes now: merges the open scope and the last one that ended into `spans`.
    private mutating func look(now: UInt64) {
        guard let read = scopes?.expectedSpans(now: now) else { return }
        lastOpen = false
        if let closed = read.closed { merge(closed) }
        if let open = read.open {
            merge(open)
            lastOpen = true
        }
    }

    private mutating func merge(_ span: AnnotationScopes.ExpectedSpan) {
        if let index = spans.lastIndex(where: { $0.since == span.since }) {
            spans[index].until = max(spans[index].until, span.until)
        } else {
            spans.append(span)
            spans.sort { $0.since < $1.since }
        }
    }

    /// The label of the first scope seen that overlaps `start..<end`.
    private func reason(from start: UInt64, to end: UInt64) -> String? {
        spans.first { $0.since < end && $0.until > start }?.name
    }
}

/// A `ThreadSampler`'s look number, shared by its copies. Watchdog thread only.
private final class LookNumber {
    var value: UInt32?
}
