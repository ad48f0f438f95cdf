/// Where a sample's stack came from: how much to trust it, and why it may be missing.
///
/// The raw values are the bytes the trace stores (`sampleProvenance` records, kind 17).
/// A plain value; use it on any thread.
public enum SampleSource: UInt8, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// No stack: no way of capturing one worked (the frames are empty).
    case none = 0
    /// The sampling signal's handler unwound the thread at this instant (exact).
    case signal = 1
    /// A perf_event sample of the thread's user registers and stack (taken at most one perf period
    /// before this instant, even while the thread was inside a system call), unwound by the
    /// watchdog from the copy.
    case perf = 2
    /// The thread was blocked in a system call: its user stack was read from the SP and PC that
    /// `/proc/.../syscall` shows and scanned for return addresses (a stale address can show up).
    case scan = 3
    /// Nothing could be captured at this instant: the stack is the last one captured earlier in the
    /// same stall (the thread may have moved on since).
    case stale = 4

    /// "signal", "perf", "scan", "stale" or "none".
    public var description: String {
        switch self {
        case .none: "none"
        case .signal: "signal"
        case .perf: "perf"
        case .scan: "scan"
        case .stale: "stale"
        }
    }

    /// What a sample without a recorded source (a trace written before sources were recorded)
    /// most likely had: `.none` without frames, else `.signal`, the only capture that existed for
    /// running threads (samples of blocked threads could also be scans; the trace cannot tell).
    public static func assumed(hasFrames: Bool) -> SampleSource {
        hasFrames ? .signal : .none
    }
}
