import CStallwatchShims
import Glibc
import StallwatchCore

/// The ways of getting the loop thread's stack, tried in order for every sample
/// (docs/watchdog.md, "Where a sample's stack comes from"): the signal, perf, the /proc stack
/// scan, the last stack of this stall (stale), none. Holds what one stall has captured so far.
/// Watchdog thread only.
final class StackCapture {
    let scanner: StackScanner
    let perf: PerfSampler?
    let perfStatus: PerfSampler.Status
    /// The last stack actually captured in the current stall (not stale), for `.stale` samples.
    private(set) var lastStack: [UInt64] = []
    /// Whether the last signal capture timed out (or was skipped because of that).
    var lastTimedOut = false
    /// When the previous sample (or the stall's detection) was: perf samples older are not news.
    var lastSampleTime: UInt64 = 0
    /// The thread's latest perf sample was taken in the kernel: a signal would wait for the
    /// syscall to return, so perf goes first while that lasts.
    var inKernelPerPerf = false

    init(tid: Int32, usePerf: Bool, sampleInterval: UInt64) {
        scanner = StackScanner(tid: tid)
        if usePerf && !PerfSampler.disabledByEnvironment {
            (perf, perfStatus) = PerfSampler.open(tid: tid, period: Self.period(for: sampleInterval))
        } else {
            (perf, perfStatus) = (nil, .disabled)
        }
    }

    /// Ten perf samples per watchdog sample of the thread's CPU time: a stalled thread that gets
    /// only a share of a CPU (a busy machine) still takes one per interval, and ten 16 KiB
    /// records fit the ring between two reads.
    static func period(for interval: UInt64) -> Int64 {
        Int64(clamping: max(interval / 10, 100_000))
    }

    /// The perf period until the stall's second sample: short, so that the first sample (taken
    /// while the signal waits its timeout) finds a perf sample even when the stalled thread gets
    /// little CPU (the period counts the thread's own CPU time).
    static let firstPeriod: Int64 = 250_000

    /// perf sampling starts with the stall's first capture, after its first /proc read.
    private var enablePending = false

    /// A stall was detected: forget the last one; perf sampling starts with the first capture.
    func beginStall() {
        lastStack = []
        lastTimedOut = false
        inKernelPerPerf = false
        enablePending = perf != nil
    }

    /// Starts perf sampling if this is the stall's first capture (two ioctls, ~2–10 µs: after
    /// the first sample's timestamp and /proc read, so detection is not delayed by them).
    func enableIfPending() {
        guard enablePending, let perf else { return }
        enablePending = false
        perf.setPeriod(Self.firstPeriod)
        perf.enable()
        lastSampleTime = sw_monotonic_ns()
    }

    /// The stall ended: stop perf sampling, so it costs nothing between stalls.
    func endStall() {
        if !enablePending { perf?.disable() }
        enablePending = false
    }

    /// The watchdog samples every `interval` now (it grows for long hangs).
    func follow(interval: UInt64) { perf?.setPeriod(Self.period(for: interval)) }

    func remember(_ addresses: [UInt64], from source: SampleSource) {
        if source != .stale && source != .none && !addresses.isEmpty { lastStack = addresses }
    }
}

extension StallMonitor {
    /// The stack for a sample taken at `time`, after `kernel` was read: the first source that
    /// gives one. May re-read `kernel` (a running thread that missed the signal was in the kernel).
    func captureStack(
        _ stacks: StackCapture, kernel: inout ThreadStateReader.Reading, reader: ThreadStateReader, time: UInt64
    ) -> (addresses: [UInt64], source: SampleSource, timedOut: Bool) {
        stacks.enableIfPending()
        defer { stacks.lastSampleTime = time }
        var timedOut = false
        // 1. Blocked in a call a signal would end early (EINTR): read the stack, never signal.
        if let call = kernel.syscall, StackScanner.neverRestarted.contains(call) {
            let scanned = stacks.scanner.scan()
            return finish(stacks, scanned, scanned.isEmpty ? .none : .scan, timedOut: false)
        }
        // 2. perf first while the thread sits in the kernel (its newest perf sample says so).
        //    No perf sample since the last one means the thread got less than a perf period of
        //    CPU since: still in the same call, or waiting for a CPU. A signal would only wait
        //    out its timeout, so skip it.
        var perfStack: PerfSampler.Stack?
        var stillInKernel = false
        if stacks.inKernelPerPerf {
            if let fresh = stacks.perf?.latest(notBefore: stacks.lastSampleTime) {
                if fresh.inKernel { return finish(stacks, fresh.addresses, .perf, timedOut: false, perf: fresh) }
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
        } else if samplerError == nil && !(kernel.state == .diskSleep && stacks.lastTimedOut) {
            let capture = Sampler.capture(
                tid: loop.threadID, timeoutNanos: Int64(configuration.captureTimeout.nanoseconds))
            record { stats in
                stats.captures += 1
                if capture.timedOut {
                    stats.captureTimeouts += 1
                } else {
                    stats.captureLatencyNanos.appendBounded(UInt64(max(0, capture.readyNanos - capture.sentNanos)))
                }
            }
            stacks.lastTimedOut = capture.timedOut
            if !capture.timedOut { return finish(stacks, capture.addresses, .signal, timedOut: false) }
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
            return finish(stacks, fresh.addresses, .perf, timedOut: timedOut, perf: fresh)
        }
        // 5. Caught blocked in a syscall: scan the stack /proc points at.
        if kernel.syscall != nil {
            let scanned = stacks.scanner.scan()
            if !scanned.isEmpty { return finish(stacks, scanned, .scan, timedOut: timedOut) }
        }
        // 6. The last stack of this stall, flagged stale; else none.
        if !stacks.lastStack.isEmpty { return finish(stacks, stacks.lastStack, .stale, timedOut: timedOut) }
        return finish(stacks, [], .none, timedOut: timedOut)
    }

    private func finish(
        _ stacks: StackCapture, _ addresses: [UInt64], _ source: SampleSource, timedOut: Bool,
        perf: PerfSampler.Stack? = nil
    ) -> (addresses: [UInt64], source: SampleSource, timedOut: Bool) {
        if let perf {
            stacks.inKernelPerPerf = perf.inKernel
            record { $0.perfUnwindNanos.appendBounded(UInt64(max(0, perf.unwindNanos))) }
        }
        stacks.remember(addresses, from: source)
        record { $0.stackSources[source, default: 0] += 1 }
        return (addresses, source, timedOut)
    }
}
