import Dispatch
import StallwatchCore

/// What a `TraceWriter` drains: a `TraceRecorder` (a `MainLoop` and its `StallMonitor`) or a
/// `HeartbeatRecorder` (executors watched by heartbeats: stalls only, no callout ring and no
/// loop board). Internal; the writer thread reads it.
protocol TraceSource: AnyObject, Sendable {
    /// The file, the writer's state and the stalls waiting for it.
    var output: TraceOutput { get }
    var mode: TraceMode { get }
    /// The monitor's configuration (its tiers and sampling interval go into the header).
    var monitorConfiguration: MonitorConfiguration { get }
    var symbolicator: Symbolicator { get }
    /// The app's version for the trace's `origin` record; nil if unknown.
    var appVersion: String? { get }
    /// The loop's callout ring; nil without a `MainLoop`.
    var callouts: EventRing? { get }
    /// The loop's board (congestion, frame clocks); nil without a `MainLoop`.
    var board: CalloutBoard? { get }
    /// How far back the flight recorder keeps callouts, in nanoseconds; 0 for none.
    var flightWindowNanos: UInt64 { get }
    /// What it watches so far (only ever grows; the writer writes each once).
    var watched: [WatchedExecutor] { get }
}

extension TraceRecorder: TraceSource {
    var monitorConfiguration: MonitorConfiguration { monitor.configuration.common }
    var symbolicator: Symbolicator { monitor.symbolicator }
    var board: CalloutBoard? { loop.board }
    var callouts: EventRing? { ring }
    var watched: [WatchedExecutor] {
        [
            WatchedExecutor(
                label: "MainLoop", how: WatchedExecutor.mainLoop, tid: UInt32(bitPattern: loop.threadID),
                since: startedAt)
        ]
    }
}
