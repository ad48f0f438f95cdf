import CStallwatchSampler
import CStallwatchShims
import Glibc
import StallwatchCore

/// The ways of getting the loop thread's stack, tried in order for every sample
/// (docs/watchdog.md, "Where a sample's stack comes from"): the signal, perf, the /proc stack
/// scan, the last stack of this stall (stale), none. Holds what one stall has captured so far.
/// Watchdog thread only.
final class StackCapture {
    let scanner: StackScanner
    /// The perf event, attached to the thread only while a stall is sampled (from its first
    /// capture to its end): an event attached to a thread costs it on every context switch even
    /// while disabled, which a server's event loop does at every request.
    private(set) var perf: PerfSampler?
    let perfStatus: PerfSampler.Status
    private let tid: Int32
    private let usePerf: Bool
    /// The last stack actually captured in the current stall (not stale), for `.stale` samples.
    private(set) var lastStack: [UInt64] = []
    /// The async callers read with `lastStack`.
    private(set) var lastChain: AsyncChain?
    /// The current sample's stack came from perf inside a syscall: that syscall's first argument
    /// (the user RDI saved at entry), which /proc does not show while the thread is on CPU.
    var perfSyscallArgument: UInt64?
    /// Whether the last signal capture timed out (or was skipped because of that).
    var lastTimedOut = false
    /// Whether the watchdog last waited in vain for the thread's own capture (self-sampling).
    var ownWaitFailed = false
    /// When the process was stopped while a sample waited for an own capture.
    var stoppedDuring: ClosedRange<UInt64>?
    /// Whether the thread blocks the self-sampling signal, once known in this stall.
    private var blocksTicks: Bool?
    /// A tick was seen waiting, blocked, outside the handler: the thread's CPU time and its
    /// tick count then.
    private var suspectedBlocking: (cpuNanos: UInt64, ticks: UInt64)?
    /// The CPU time a thread must run with a tick held back, taking none, to be taken to block
    /// its ticks: two tick floors (`MonitorConfiguration.selfSamplingPeriod`), far more than the
    /// handler's own few tens of microseconds.
    static let blockingEvidenceNanos: UInt64 = 1_000_000

    /// Whether thread `tid` blocks the self-sampling signal (once known, for the rest of the
    /// stall): its `SigBlk` in /proc has the signal, a tick waits in its `SigPnd`/`ShdPnd`, and
    /// it ran `blockingEvidenceNanos` of CPU since it was first seen so without taking a tick.
    /// The mask and a pending tick at one look are not enough: the kernel blocks the signal from
    /// the moment it delivers a tick until the handler returns, and a thread held up there
    /// (preempted, or its virtual CPU taken by the host while its tick timer ran on) shows the
    /// next tick pending behind a blocked signal. Signalled for the rest of the stall, such a
    /// thread soon runs into a sleep that a signal cuts short. A thread that really blocks its
    /// ticks runs and takes none; one held up in the handler does not run. Not cached while the
    /// mask has the signal but no tick is pending yet: a thread that got little CPU since it
    /// blocked the signal has had no tick to hold back, and caching that "no" left it
    /// unsignalled, its samples stale, for the rest of the stall.
    func ticksBlocked(tid: Int32, own: SelfSampler) -> Bool {
        if let blocksTicks { return blocksTicks }
        let (blocked, pending) = Self.tickMask(signal: sw_self_default_signal(), tid: tid)
        if !blocked {
            blocksTicks = false
            return false
        }
        if !pending || own.inHandler { return false }
        let ticks = own.counters.ticks
        let cpuNanos = ThreadCPUClock(tid: tid).read() ?? 0
        guard let suspected = suspectedBlocking, suspected.ticks == ticks, cpuNanos >= suspected.cpuNanos else {
            suspectedBlocking = (cpuNanos, ticks)
            return false
        }
        guard cpuNanos - suspected.cpuNanos >= Self.blockingEvidenceNanos else { return false }
        blocksTicks = true
        return true
    }

    /// Whether thread `tid`'s mask has `signal` and whether one waits for it, from its /proc
    /// status (both false when it cannot be read).
    private static func tickMask(signal: Int32, tid: Int32) -> (blocked: Bool, pending: Bool) {
        guard let file = fopen("/proc/self/task/\(tid)/status", "r") else { return (false, false) }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        let bit = UInt64(1) << UInt64(signal - 1)
        var blocked = false
        var pending = false
        while getline(&line, &capacity, file) > 0 {
            let text = String(cString: line!)
            for field in ["SigBlk:", "SigPnd:", "ShdPnd:"] where text.hasPrefix(field) {
                let mask = UInt64(text.dropFirst(7).trimmingCharacters(in: .whitespacesAndNewlines), radix: 16) ?? 0
                if mask & bit == 0 { continue }
                if field == "SigBlk:" { blocked = true } else { pending = true }
            }
        }
        return (blocked, pending)
    }
    /// When the previous sample (or the stall's detection) was: perf samples older are not news.
    var lastSampleTime: UInt64 = 0
    /// The thread's latest perf sample was taken in the kernel: a signal would wait for the
    /// syscall to return, so perf goes first while that lasts.
    var inKernelPerPerf = false

    /// Opens perf on `tid` once, to learn what it can do (`perfStatus`), and closes it again.
    init(tid: Int32, usePerf: Bool, sampleInterval: UInt64) {
        scanner = StackScanner(tid: tid)
        self.tid = tid
        if usePerf && !PerfSampler.disabledByEnvironment {
            perfStatus = PerfSampler.open(tid: tid, period: Self.firstPeriod).1
        } else {
            perfStatus = .disabled
        }
        self.usePerf = perfStatus == .kernelAndUser || perfStatus == .userOnly
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

    /// The loop callout the current stall is (for the thread's own captures), if any.
    private(set) var stallSequence: UInt64?
    /// The time of the stall's last sample from any source (0 before its first): own captures
    /// older than it are not news.
    var ownAfter: UInt64 = 0

    /// A stall was detected: forget the last one; perf attaches with the first capture.
    func beginStall(sequence: UInt64?) {
        stallSequence = sequence
        ownAfter = 0
        lastStack = []
        lastChain = nil
        lastTimedOut = false
        ownWaitFailed = false
        blocksTicks = nil
        suspectedBlocking = nil
        inKernelPerPerf = false
        enablePending = usePerf
    }

    /// Attaches perf and starts it if this is the stall's first capture (after the first
    /// sample's timestamp and /proc read, so detection is not delayed by it).
    func enableIfPending() {
        guard enablePending else { return }
        enablePending = false
        guard let opened = PerfSampler.open(tid: tid, period: Self.firstPeriod).0 else { return }
        opened.enable()
        perf = opened
        lastSampleTime = sw_monotonic_ns()
    }

    /// The stall ended: perf detaches, so it costs the thread nothing between stalls.
    func endStall() {
        perf = nil
        enablePending = false
    }

    /// The watchdog samples every `interval` now (it grows for long hangs).
    func follow(interval: UInt64) { perf?.setPeriod(Self.period(for: interval)) }

    func remember(_ addresses: [UInt64], from source: SampleSource, chain: AsyncChain? = nil) {
        if source != .stale && source != .none && !addresses.isEmpty {
            lastStack = addresses
            lastChain = chain
        }
    }
}
