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
    public let path: String
    /// The monitor whose stalls it records (the recorder starts and stops it).
    public let monitor: HeartbeatMonitor

    let fd: Int32
    let pending = Locked<[TraceRecorder.PendingStall]>([])
    let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let running = Locked(false)
    private let observer = Locked<(@Sendable (Stall) -> Void)?>(nil)

    /// A recorder writing to `path` (created or truncated) for `monitor`, which it starts and
    /// stops. Throws if the file cannot be opened.
    public init(path: String, monitor: HeartbeatMonitor) throws {
        // A preloaded recorder writing the same file (stallwatch record) finishes first.
        PreloadYield.yield()
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SystemError(call: "open(\(path))", errno: errno) }
        self.fd = fd
        self.path = path
        self.monitor = monitor
    }

    deinit {
        stop()
        close(fd)
    }

    /// Called with every finished stall after it is queued for the file. Runs on the monitor's
    /// delivery queue. Any thread.
    public var onStallEnded: (@Sendable (Stall) -> Void)? {
        get { observer.withLock { $0 } }
        set { observer.withLock { $0 = newValue } }
    }

    /// Starts the monitor and the writer. Any thread.
    public func start() throws {
        guard
            running.withLock({ running in
                defer { running = true }
                return !running
            })
        else { return }
        monitor.onStallBegan = { [weak self] stall in self?.enqueue(.began(stall)) }
        monitor.onStallEnded = { [weak self] stall in
            guard let self else { return }
            enqueue(.ended(stall))
            observer.withLock { $0 }?(stall)
        }
        // The preload library starts the monitor first and the recorder at the first heartbeat.
        if !monitor.isRunning { try monitor.start() }
        let thread = Thread { [self] in
            sw_set_thread_name("stallwatchtrace")
            var writer = TraceWriter(recorder: self)
            writer.run()
            finished.signal()
        }
        thread.start()
    }

    /// Stops recording: the monitor stops (a stall in progress is written unfinished), the
    /// writer drains everything and the file is complete. Any thread.
    public func stop() {
        guard running.withLock({ $0 }) else { return }
        monitor.stop()
        running.withLock { $0 = false }
        wake.signal()
        finished.wait()
    }

    private func enqueue(_ stall: TraceRecorder.PendingStall) {
        pending.withLock { $0.append(stall) }
        wake.signal()
    }
}

extension HeartbeatRecorder: TraceSource {
    var mode: TraceMode { .stalls }
    var isRunning: Bool { running.withLock { $0 } }
    var tiers: TierThresholds { monitor.configuration.tiers }
    var sampleInterval: Duration { monitor.configuration.sampleInterval }
    var symbolicator: Symbolicator { monitor.symbolicator }
    var callouts: EventRing? { nil }
    var board: CalloutBoard? { nil }
    /// The app cannot name its version here: `STALLWATCH_APP_VERSION`, if set.
    var appVersion: String? {
        let version = ProcessInfo.processInfo.environment["STALLWATCH_APP_VERSION"]
        return version?.isEmpty == false ? version : nil
    }
}
