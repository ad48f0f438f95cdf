import CStallwatchSampler
import Glibc
import StallwatchCore

/// The Swift side of `CStallwatchPerf`: a task-clock perf event on the loop thread whose
/// samples carry its user registers and a copy of its user stack, enabled only while a stall is
/// in progress and unwound on the watchdog thread. Watchdog thread only (one instance per
/// monitored loop).
final class PerfSampler {
    typealias Status = StallMonitor.PerfSampling

    /// A sample's stack, unwound.
    struct Stack {
        var addresses: [UInt64]
        var time: UInt64
        var inKernel: Bool
        var unwindNanos: Int64
        /// In a syscall (the user IP follows a `syscall` instruction): its first argument.
        var syscallArgument: UInt64?
        /// The awaiting callers of the async function the thread was in, if it was.
        var chain: AsyncChain? = nil
    }

    static let stackBytes: Int32 = 16_384
    private let handle: OpaquePointer
    let status: Status
    private var period: Int64 = 0
    private var frames = [UInt](repeating: 0, count: Int(SW_SAMPLER_MAX_FRAMES))

    /// Whether the environment switches perf sampling off (`STALLWATCH_PERF=0`, `off`, `false`, `no`).
    static var disabledByEnvironment: Bool {
        StallwatchEnvironment.isOff(getenv(StallwatchEnvironment.perf).map { String(cString: $0) })
    }

    /// Opens the event on `tid`, or returns nil with the reason in `status`.
    static func open(tid: Int32, period: Int64, userOnly: Bool = false) -> (PerfSampler?, Status) {
        var handle: OpaquePointer?
        var info = sw_perf_open_info()
        let code = sw_perf_open(tid, period, stackBytes, userOnly ? SW_PERF_USER_ONLY : 0, &handle, &info)
        guard code == SW_PERF_OK, let handle else {
            let reason = String(cString: sw_perf_strerror(code))
            let system = info.sys_errno != 0 ? ": " + String(cString: strerror(info.sys_errno)) : ""
            return (nil, .unavailable("\(reason)\(system) (perf_event_paranoid \(info.paranoid))"))
        }
        let status: Status = info.kernel_samples != 0 ? .kernelAndUser : .userOnly
        return (PerfSampler(handle: handle, status: status, period: period), status)
    }

    private init(handle: OpaquePointer, status: Status, period: Int64) {
        self.handle = handle
        self.status = status
        self.period = period
    }

    deinit { sw_perf_close(handle) }

    /// Starts sampling (a stall began), discarding older samples.
    func enable() { _ = sw_perf_enable(handle) }

    /// Stops sampling (the stall ended).
    func disable() { _ = sw_perf_disable(handle) }

    /// Samples every `nanos` of the thread's CPU time from now on.
    func setPeriod(_ nanos: Int64) {
        guard nanos != period, sw_perf_set_period(handle, nanos) == SW_PERF_OK else { return }
        period = nanos
    }

    /// The newest sample taken at or after `notBefore` (CLOCK_MONOTONIC ns), unwound; nil if none.
    func latest(notBefore: UInt64) -> Stack? {
        var sample = sw_perf_sample()
        let count = frames.withUnsafeMutableBufferPointer {
            sw_perf_latest(
                handle, Int64(clamping: notBefore), SW_PERF_UNWIND_DWARF, $0.baseAddress, Int32($0.count), nil, 0,
                &sample)
        }
        guard count > 0 else { return nil }
        return Stack(
            addresses: frames[..<Int(count)].map { UInt64($0) }, time: UInt64(sample.time_ns),
            inKernel: sample.in_kernel != 0, unwindNanos: sample.unwind_ns,
            syscallArgument: sample.in_syscall != 0 ? sample.syscall_arg0 : nil, chain: AsyncChain(sample.chain))
    }
}

extension StallMonitor {
    /// How the monitor's perf_event path runs (the stacks of samples the signal cannot take).
    /// A plain value; any thread.
    public enum PerfSampling: Sendable, Hashable, CustomStringConvertible {
        /// Samples arrive while the thread is in the kernel too (opened with exclude_kernel=0:
        /// root, CAP_PERFMON, or perf_event_paranoid ≤ 1), so long syscalls get stacks.
        case kernelAndUser
        /// Only samples taken in user mode arrive (exclude_kernel=1: unprivileged at paranoid 2).
        case userOnly
        /// Switched off (`STALLWATCH_PERF=0`, or `Configuration.perfSampling` false).
        case disabled
        /// perf_event_open or its ring buffer failed; the reason (e.g. paranoid 3).
        case unavailable(String)

        /// "kernel+user", "user only", "disabled" or "unavailable: <reason>".
        public var description: String {
            switch self {
            case .kernelAndUser: "kernel+user"
            case .userOnly: "user only"
            case .disabled: "disabled"
            case .unavailable(let reason): "unavailable: \(reason)"
            }
        }
    }
}
