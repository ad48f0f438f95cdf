import CStallwatchSampler
import Synchronization

/// The Swift side of `CStallwatchSampler`: installs the signal handler once per process and
/// captures another thread's stack. Internal; the watchdog thread is the only capturer.
enum Sampler {
    /// An error installing the sampler, with the C sampler's explanation.
    struct InstallError: Error, CustomStringConvertible {
        var code: Int32
        var signal: Int32
        /// libunwind is not there: stacks cannot be captured, /proc facts still can.
        var isMissingUnwinder: Bool { code == Sampler.missingUnwinderCode }
        var description: String {
            "cannot install the sampling signal \(signal): \(String(cString: sw_sampler_strerror(code)))"
        }
    }

    /// The C sampler's code for "libunwind cannot be loaded".
    static let missingUnwinderCode = SW_SAMPLER_ENOUNWIND

    private static let installed = Atomic<Int32>(0)

    static var isInstalled: Bool { installed.load(ordering: .acquiring) != 0 }

    /// The default sampling signal (SIGRTMIN+4).
    static var defaultSignal: Int32 { sw_sampler_default_signal() }

    /// Installs the handler for `signal` (once per process; the same signal again is fine).
    static func install(signal: Int32) throws(InstallError) {
        let current = installed.load(ordering: .acquiring)
        if current == signal { return }
        let code = sw_sampler_install(signal)
        guard code == SW_SAMPLER_OK else { throw InstallError(code: code, signal: signal) }
        installed.store(signal, ordering: .releasing)
    }

    /// On the thread to be sampled: unblocks the signals (sampling and, if installed,
    /// self-sampling) and primes libunwind's caches.
    static func prepareCurrentThread() {
        _ = sw_sampler_prepare_thread()
        _ = sw_self_prepare_thread()
    }

    /// A captured stack: frame 0 is the interrupted instruction, the rest return addresses.
    struct Capture {
        var addresses: [UInt64]
        var timedOut: Bool
        var sentNanos: Int64
        var readyNanos: Int64
        /// The awaiting callers of the async function the thread was in, if it was.
        var chain: AsyncChain? = nil
    }

    /// Captures thread `tid`'s stack, waiting at most `timeoutNanos`. Watchdog thread only.
    static func capture(tid: Int32, timeoutNanos: Int64) -> Capture {
        var result = sw_capture_result()
        var frames = [UInt](repeating: 0, count: Int(SW_SAMPLER_MAX_FRAMES))
        let code = frames.withUnsafeMutableBufferPointer {
            sw_sampler_capture(tid, $0.baseAddress, Int32(SW_SAMPLER_MAX_FRAMES), timeoutNanos, &result)
        }
        guard code >= 0 else {
            return Capture(addresses: [], timedOut: true, sentNanos: result.sent_ns, readyNanos: 0)
        }
        let count = Int(result.frame_count)
        return Capture(
            addresses: frames[..<count].map { UInt64($0) }, timedOut: false, sentNanos: result.sent_ns,
            readyNanos: result.ready_ns, chain: AsyncChain(result.chain))
    }

    /// The object that defines `_Unwind_RaiseException` for the process (libgcc_s, unless
    /// something replaced the process's unwinder).
    static var unwinderOwner: String? {
        sw_sampler_unwinder_owner().map { String(cString: $0) }
    }
}
