import CStallwatchShims
import Dispatch
import Foundation
import StallwatchCore

/// Records a `MainLoop` to a trace file: stalls with their samples and symbols as the
/// monitor finds them, what the loop ran in the seconds before each (the flight recorder),
/// per-second summaries (loop-latency histogram, congestion, frame clocks, lost records) and,
/// in `full` mode, every callout.
///
/// The loop thread only pushes fixed-size events into a lock-free ring; a writer thread
/// drains it, encodes records and writes the file. When the ring is full, events are
/// dropped and counted (a `lostRecords` record), and the loop never waits. A stall's begin
/// record and first sample are written as soon as the monitor detects it, so a process killed
/// mid-hang leaves a readable trace that shows the unfinished hang.
///
/// `start()` and `stop()` may be called from any thread.
public final class TraceRecorder: @unchecked Sendable {
    /// Where the trace goes.
    public var path: String { output.path }
    /// What it records.
    public let mode: TraceMode
    /// The monitor whose stalls it records: the recorder's own, which it starts and stops; or,
    /// for the recorder `STALLWATCH_TRACE` started in an app that runs its own monitor, the
    /// app's, which it only listens to. Any thread.
    public var monitor: StallMonitor { source.withLock { $0.monitor } }

    /// Where the stalls come from, and whether the recorder owns (starts and stops) that monitor
    /// or listens to it (`listener`: its id there).
    private let source: Locked<(monitor: StallMonitor, owned: Bool, listener: UInt64?)>
    /// Stall ids in the trace: a monitor's own ids, after the last id of the monitor recorded
    /// before it (each monitor counts from 1).
    private let ids = Locked<(offset: UInt64, highest: UInt64)>((0, 0))
    /// The app's version, written into the trace's origin record so that fleet reports can
    /// split stalls by version: the `appVersion` given to `init`, else `STALLWATCH_APP_VERSION`.
    public let appVersion: String?

    /// How far back the flight recorder keeps the loop's callouts in memory, so that each
    /// stall's record says what ran just before it (`show --stall N`) and congested iterations
    /// name their sites, in either mode; `.zero` turns it off (then `stalls` mode records no
    /// callouts at all). Any thread.
    public let flightWindow: Duration
    var flightWindowNanos: UInt64 { flightWindow.nanoseconds }

    let loop: MainLoop
    /// When it was made: from then on it watches the loop (its `watched` record).
    let startedAt = sw_monotonic_ns()
    /// Full mode carries every callout to the file: a ring of 256 Ki events (10 MiB). Stalls
    /// mode with the flight recorder carries them to its window: 64 Ki events (2.5 MiB);
    /// without it, iterations only (4 Ki events). The writer drains every 5 ms while the loop
    /// is busy, so these ride out about a million callouts a second (a callout and an iteration
    /// event each); beyond what the writer can take, events are dropped and counted.
    let ring: EventRing
    /// The file and its writer, as `HeartbeatRecorder`'s.
    let output: TraceOutput

    /// Called with every finished stall after it is queued for the file (the monitor's own
    /// callbacks belong to the recorder), e.g. for an app's own summary. Runs on the monitor's
    /// delivery queue, never on the loop thread. Any thread.
    public var onStallEnded: (@Sendable (Stall) -> Void)? {
        get { output.onStallEnded }
        set { output.onStallEnded = newValue }
    }

    /// The flight recorder's window unless told otherwise (2 s). Any thread.
    public static let defaultFlightWindow = Duration.seconds(2)

    /// A recorder writing to `path` (created or truncated) for `loop`, with a monitor of
    /// `configuration`; `appVersion` (else `STALLWATCH_APP_VERSION`) goes into the trace's
    /// origin; `flightWindow` (negative counts as zero) is how far back each stall's lead-up
    /// reaches. Throws if the file cannot be opened.
    public init(
        path: String, loop: MainLoop = .main, mode: TraceMode = .stalls,
        configuration: StallMonitor.Configuration = StallMonitor.Configuration(), appVersion: String? = nil,
        flightWindow: Duration = TraceRecorder.defaultFlightWindow
    ) throws {
        self.output = try TraceOutput(path: path)
        self.mode = mode
        self.appVersion = appVersion ?? TraceOutput.environmentAppVersion
        self.loop = loop
        self.flightWindow = max(flightWindow, .zero)
        self.source = Locked((StallMonitor(loop: loop, configuration: configuration), true, nil))
        self.ring = EventRing(capacity: mode == .full ? 1 << 18 : flightWindow > .zero ? 1 << 16 : 1 << 12)
    }

    /// A recorder writing to `path` the stalls of `monitor`, which someone else starts and stops.
    convenience init(
        path: String, mode: TraceMode, recording monitor: StallMonitor,
        flightWindow: Duration = TraceRecorder.defaultFlightWindow
    ) throws {
        try self.init(
            path: path, loop: monitor.loop, mode: mode, configuration: monitor.configuration,
            flightWindow: flightWindow)
        source.withLock { $0 = (monitor, false, nil) }
    }

    deinit { stop() }

    /// Starts the monitor and the writer. Any thread.
    public func start() throws {
        try output.start(self) {
            let (monitor, owned, _) = source.withLock { $0 }
            // A listener, not the callbacks: they stay the app's, and a listener also gets a
            // stall's samples while it runs (a hang that ends in a kill keeps them).
            listen(to: monitor)
            if owned { try monitor.start() }
            // The loop's callout stream, unless another recorder of the app's already takes it.
            let attach: @Sendable () -> Void = { [loop, ring, mode, flightWindow] in
                guard loop.calloutState.pointee.ring == nil else { return }
                loop.calloutState.pointee.ring = ring
                loop.calloutState.pointee.recordCallouts = mode == .full || flightWindow > .zero
            }
            if loop.isCurrent { attach() } else { loop.post(label: "TraceRecorder.attach", attach) }
        }
    }

    /// Stops recording: the monitor stops (a stall in progress is written unfinished), the
    /// writer drains everything and the file is complete. Any thread but the loop's while it
    /// is inside a callout that the monitor is timing.
    public func stop() {
        output.stop {
            // The monitor first: its last stalls reach the output before the writer's final drain.
            let (monitor, owned, listener) = source.withLock { $0 }
            if owned { monitor.stop() }
            if let listener { monitor.removeListener(listener) }
            let detach: @Sendable () -> Void = { [loop, ring] in
                guard loop.calloutState.pointee.ring === ring else { return }
                loop.calloutState.pointee.ring = nil
                loop.calloutState.pointee.recordCallouts = false
            }
            if loop.isCurrent { detach() } else { loop.post(label: "TraceRecorder.detach", detach) }
        }
    }

    /// Stops the monitor it owns, so that an app's own can watch the loop; goes on writing (its
    /// callout stream too) and records nothing more until `adopt`. Any thread.
    func releaseMonitor() {
        let monitor = source.withLock { state -> StallMonitor? in
            guard state.owned else { return nil }
            state.owned = false
            return state.monitor
        }
        monitor?.stop()
    }

    /// Records `monitor`'s stalls from now on, without owning it. Any thread.
    func adopt(_ monitor: StallMonitor) {
        source.withLock { $0 = (monitor, false, nil) }
        ids.withLock { $0.offset = $0.highest }
        listen(to: monitor)
    }

    private func listen(to monitor: StallMonitor) {
        let id = monitor.addListener { [weak self] stall, began in self?.record(stall, began: began) }
        source.withLock { $0.listener = id }
    }

    private func record(_ stall: Stall, began: Bool) {
        var stall = stall
        stall.id = ids.withLock { ids in
            ids.highest = max(ids.highest, ids.offset + stall.id)
            return ids.offset + stall.id
        }
        output.enqueue(stall, began: began)
    }
}
