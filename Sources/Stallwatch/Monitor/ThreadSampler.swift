import CStallwatchShims
import Glibc
import StallwatchCore

/// One sample of a watched thread — /proc facts, then its stack (signal capture, or a stack
/// scan for a thread parked in a call a signal would cut short), then the innermost annotation
/// — exactly as `StallMonitor` takes them. Shared by `StallMonitor` (the `MainLoop` thread) and
/// `HeartbeatMonitor` (any executor's thread, learned from a heartbeat). Watchdog thread only.
struct ThreadSampler {
    let tid: Int32
    let reader: ThreadStateReader
    let scanner: StackScanner
    /// How long one capture may wait for the handler.
    let captureTimeout: Duration
    /// False when libunwind cannot be loaded: samples then hold only /proc facts.
    let canCapture: Bool
    /// The thread's annotation scopes, if it has any.
    let annotations: AnnotationScopes?

    init(tid: Int32, captureTimeout: Duration, canCapture: Bool, annotations: AnnotationScopes?) {
        self.tid = tid
        self.reader = ThreadStateReader(tid: tid)
        self.scanner = StackScanner(tid: tid)
        self.captureTimeout = captureTimeout
        self.canCapture = canCapture
        self.annotations = annotations
    }

    /// One sample: /proc first (a signal would disturb the syscall it reports), then the stack.
    /// `record` receives the capture counters.
    func sample(
        lastCaptureTimedOut: inout Bool, record: ((inout StallMonitor.Statistics) -> Void) -> Void
    ) -> Sample {
        let time = sw_monotonic_ns()
        var kernel = reader.read()
        var addresses: [UInt64] = []
        var timedOut = false
        // A thread in state D cannot run the handler until its syscall returns; after one
        // timeout, do not queue more signals while it stays there.
        if let call = kernel.syscall, StackScanner.neverRestarted.contains(call) {
            // A signal would end this sleep or poll early (EINTR): read the stack instead.
            addresses = scanner.scan()
        } else if canCapture && !(kernel.state == .diskSleep && lastCaptureTimedOut) {
            let capture = Sampler.capture(tid: tid, timeoutNanos: Int64(captureTimeout.nanoseconds))
            addresses = capture.addresses
            timedOut = capture.timedOut
            record { stats in
                stats.captures += 1
                if capture.timedOut {
                    stats.captureTimeouts += 1
                } else {
                    stats.captureLatencyNanos.appendBounded(UInt64(max(0, capture.readyNanos - capture.sentNanos)))
                }
            }
            // "running" says only that the thread was on a CPU, user or kernel. A running thread
            // that did not take the signal within the timeout was in the kernel all along (a
            // long write, page-cache throttling): read /proc again for what it waits in now.
            if capture.timedOut && kernel.syscall == nil {
                let again = reader.read()
                if again.syscall != nil { kernel = again }
            }
        } else {
            timedOut = true
        }
        lastCaptureTimedOut = timedOut
        return Sample(
            time: time, frames: addresses.map { Frame(address: $0) }, state: kernel.state, syscall: kernel.syscall,
            wchan: kernel.wchan, cpuTimeNanos: kernel.cpuTimeNanos, annotation: annotations?.innermost(),
            captureTimedOut: timedOut)
    }
}
