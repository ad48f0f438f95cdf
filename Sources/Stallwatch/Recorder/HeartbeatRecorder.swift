import CStallwatchShims
import Dispatch
import Foundation
import StallwatchCore

/// Records the stalls a `HeartbeatMonitor` finds to a trace file, in the format
/// `TraceRecorder` writes (stalls mode: stalls with their samples and symbols; there is no
/// callout stream and no loop summary, since the monitor does not own the loops). Each stall's
/// call site carries its executor's label. The writer thread is the same as `TraceRecorder`'s.
///
/// `start()` and `stop()` may be called from any thread.
public final class HeartbeatRecorder: @unchecked Sendable {
    /// Where the trace goes.
    public var path: String { output.path }
    /// The monitor whose stalls it records (the recorder starts and stops it).
    public let monitor: HeartbeatMonitor
    /// The file and its writer, as `TraceRecorder`'s.
    let output: TraceOutput

    /// A recorder writing to `path` (created or truncated) for `monitor`, which it starts and
    /// stops. Throws if the file cannot be opened.
    public init(path: String, monitor: HeartbeatMonitor) throws {
        self.output = try TraceOutput(path: path)
        self.monitor = monitor
    }

    deinit { stop() }

    /// Called with every finished stall after it is queued for the file. Runs on the monitor's
    /// delivery queue. Any thread.
    public var onStallEnded: (@Sendable (Stall) -> Void)? {
        get { output.onStallEnded }
        set { output.onStallEnded = newValue }
    }

    /// Starts the monitor and the writer. Any thread.
    public func start() throws {
        try output.start(self) {
            // A listener, not the callbacks: they stay the program's, and a listener also gets a
            // stall's samples while it runs (a hang that ends in a kill keeps them).
            _ = monitor.core.addListener { [output] stall, began in output.enqueue(stall, began: began) }
            // The preload library starts the monitor first and the recorder at the first heartbeat.
            if !monitor.isRunning { try monitor.start() }
        }
    }

    /// Stops recording: the monitor stops (a stall in progress is written unfinished), the
    /// writer drains everything and the file is complete. Any thread.
    public func stop() { output.stop { monitor.stop() } }
}

extension HeartbeatRecorder: TraceSource {
    var mode: TraceMode { .stalls }
    var monitorConfiguration: MonitorConfiguration { monitor.configuration.common }
    var symbolicator: Symbolicator { monitor.symbolicator }
    var callouts: EventRing? { nil }
    var board: CalloutBoard? { nil }
    var flightWindowNanos: UInt64 { 0 }
    var watched: [WatchedExecutor] { monitor.watchedExecutors }
    /// The app cannot name its version here: `STALLWATCH_APP_VERSION`, if set.
    var appVersion: String? { TraceOutput.environmentAppVersion }
}
