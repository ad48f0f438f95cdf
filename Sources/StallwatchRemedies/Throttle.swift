import CStallwatchShims
import Stallwatch
import StallwatchCore

/// Turns many requests into at most one run per `FrameClock` tick, or per minimum interval:
/// the latest requested body runs, earlier ones since the last run are dropped. With a frame
/// clock, runs are aligned to its ticks (the run follows the tick it is due at, in the same
/// timer phase), like a display-link-driven redraw. With an interval, the first request runs
/// at the next loop iteration and later ones no sooner than `minimumInterval` after the
/// previous run. Every request is eventually served by a run that follows it.
///
/// Create, request and cancel on the loop thread; bodies run there, isolated like the code that
/// requests them (main-actor code on `MainLoop.main`: they may use main-actor state).
public final class Throttle {
    private enum Pacing {
        case frames(FrameClock)
        case interval(UInt64)
    }

    /// The loop it runs on.
    public let loop: MainLoop
    /// Requests so far.
    public private(set) var requests = 0
    /// Runs so far.
    public private(set) var executions = 0

    private let pacing: Pacing
    private let modes: [MainLoop.Mode]
    private var pending: (() -> Void)?
    private var timer: MainLoop.Timer?
    private var lastRun: UInt64?

    /// At most one run per tick of `frameClock`, in the clock's modes. If the clock is stopped,
    /// runs are paced at its frame interval. Loop thread only.
    public init(frameClock: FrameClock) {
        loop = frameClock.loop
        pacing = .frames(frameClock)
        modes = frameClock.modes
    }

    /// At most one run per `minimumInterval` (positive), in `modes`. Loop thread only.
    public init(loop: MainLoop, minimumInterval: Duration, modes: [MainLoop.Mode] = [.common]) {
        require(
            minimumInterval > .zero, "Throttle minimumInterval must be positive, got \(minimumInterval)")
        self.loop = loop
        pacing = .interval(minimumInterval.nanoseconds)
        self.modes = modes
    }

    /// Whether a run is scheduled.
    public var isPending: Bool { pending != nil }

    /// Asks for `body` to run at the next slot; replaces a body not yet run. Loop thread only.
    public func request(
        file: StaticString = #fileID, line: UInt = #line, _ body: @escaping () -> Void
    ) {
        require(loop.isCurrent, "Throttle.request must be called on the loop's thread")
        requests += 1
        pending = body
        guard timer == nil else { return }
        timer = loop.schedule(
            at: nextSlot(), intervalNanos: nil, toleranceNanos: 0, modes: modes,
            site: CalloutSite(kind: .timer, label: "Throttle", file: file, line: UInt32(truncatingIfNeeded: line))
        ) { [unowned self] _ in fire() }
    }

    /// Drops the pending body, if any. Loop thread only.
    public func cancel() {
        require(loop.isCurrent, "Throttle.cancel must be called on the loop's thread")
        pending = nil
        timer?.cancel()
        timer = nil
    }

    deinit { timer?.cancel() }

    private func nextSlot() -> UInt64 {
        let now = sw_monotonic_ns()
        switch pacing {
        case .frames(let clock):
            if let tick = clock.nextTickNanos { return tick }
            return lastRun.map { max(now, $0.saturatingAdding(clock.intervalNanos)) } ?? now
        case .interval(let interval):
            return lastRun.map { max(now, $0.saturatingAdding(interval)) } ?? now
        }
    }

    private func fire() {
        timer = nil
        guard let body = pending else { return }
        pending = nil
        executions += 1
        lastRun = sw_monotonic_ns()
        body()
    }
}

/// Runs only the last of a burst of requests, once `quietPeriod` has passed with no new
/// request (each request restarts the period and replaces the pending body), like a search
/// box that queries when typing pauses. Create, request, flush and cancel on the loop thread;
/// bodies run there, isolated like the code that requests them (main-actor code on
/// `MainLoop.main`: they may use main-actor state).
public final class Debounce {
    /// The loop it runs on.
    public let loop: MainLoop
    /// How long requests must pause before the last one runs.
    public let quietPeriod: Duration
    /// Requests so far.
    public private(set) var requests = 0
    /// Runs so far.
    public private(set) var executions = 0

    private let modes: [MainLoop.Mode]
    private var pending: (() -> Void)?
    private var timer: MainLoop.Timer?

    /// A debouncer on `loop` with a positive `quietPeriod`, firing in `modes`. Loop thread only.
    public init(loop: MainLoop, quietPeriod: Duration, modes: [MainLoop.Mode] = [.common]) {
        require(quietPeriod > .zero, "Debounce quietPeriod must be positive, got \(quietPeriod)")
        self.loop = loop
        self.quietPeriod = quietPeriod
        self.modes = modes
    }

    /// Whether a body waits for the quiet period.
    public var isPending: Bool { pending != nil }

    /// Replaces the pending body with `body` and restarts the quiet period. Loop thread only.
    public func request(
        file: StaticString = #fileID, line: UInt = #line, _ body: @escaping () -> Void
    ) {
        require(loop.isCurrent, "Debounce.request must be called on the loop's thread")
        requests += 1
        pending = body
        timer?.cancel()
        timer = loop.schedule(
            at: sw_monotonic_ns().saturatingAdding(quietPeriod.nanoseconds), intervalNanos: nil, toleranceNanos: 0,
            modes: modes,
            site: CalloutSite(kind: .timer, label: "Debounce", file: file, line: UInt32(truncatingIfNeeded: line))
        ) { [unowned self] _ in fire() }
    }

    /// Runs the pending body now, if any, instead of after the quiet period. Loop thread only.
    public func flush() {
        require(loop.isCurrent, "Debounce.flush must be called on the loop's thread")
        fire()
    }

    /// Drops the pending body, if any. Loop thread only.
    public func cancel() {
        require(loop.isCurrent, "Debounce.cancel must be called on the loop's thread")
        pending = nil
        timer?.cancel()
        timer = nil
    }

    deinit { timer?.cancel() }

    private func fire() {
        timer?.cancel()
        timer = nil
        guard let body = pending else { return }
        pending = nil
        executions += 1
        body()
    }
}
