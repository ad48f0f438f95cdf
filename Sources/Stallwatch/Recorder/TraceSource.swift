import Dispatch
import StallwatchCore

/// What a `TraceWriter` drains: a `TraceRecorder` (a `MainLoop` and its `StallMonitor`) or a
/// `HeartbeatRecorder` (executors watched by heartbeats: stalls only, no callout ring and no
/// loop board). Internal; the writer thread reads it.
protocol TraceSource: AnyObject, Sendable {
    var path: String { get }
    var mode: TraceMode { get }
    var fd: Int32 { get }
    var pending: Locked<[TraceRecorder.PendingStall]> { get }
    var wake: DispatchSemaphore { get }
    var isRunning: Bool { get }
    var tiers: TierThresholds { get }
    var sampleInterval: Duration { get }
    var symbolicator: Symbolicator { get }
    /// The app's version for the trace's `origin` record; nil if unknown.
    var appVersion: String? { get }
    /// The loop's callout ring; nil without a `MainLoop`.
    var callouts: EventRing? { get }
    /// The loop's board (congestion, frame clocks); nil without a `MainLoop`.
    var board: CalloutBoard? { get }
}

extension TraceRecorder: TraceSource {
    var tiers: TierThresholds { monitor.configuration.tiers }
    var sampleInterval: Duration { monitor.configuration.sampleInterval }
    var symbolicator: Symbolicator { monitor.symbolicator }
    var board: CalloutBoard? { loop.board }
    var callouts: EventRing? { ring }
}
