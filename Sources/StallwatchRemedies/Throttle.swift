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

    /// The loop it runs on. Loop thread.
    public var loop: MainLoop { run.loop }
    /// Requests so far. Loop thread.
    public var requests: Int { run.requests }
    /// Runs so far. Loop thread.
    public var executions: Int { run.executions }

    private let pacing: Pacing
    private var run: PendingRun
    private var lastRun: UInt64?

    /// At most one run per tick of `frameClock`, in the clock's modes. If the clock is stopped,
    /// runs are paced at its frame interval. Loop thread only.
    public init(frameClock: FrameClock) {
        pacing = .frames(frameClock)
        run = PendingRun(loop: frameClock.loop, modes: frameClock.modes, label: "Throttle")
    }

    /// At most one run per `minimumInterval` (positive), in `modes`. Loop thread only.
    public init(loop: MainLoop, minimumInterval: Duration, modes: [MainLoop.Mode] = [.common]) {
        require(
            minimumInterval > .zero, "Throttle minimumInterval must be positive, got \(minimumInterval)")
        pacing = .interval(minimumInterval.nanoseconds)
        run = PendingRun(loop: loop, modes: modes, label: "Throttle")
    }

    /// Whether a run is scheduled. Loop thread.
    public var isPending: Bool { run.body != nil }

    /// Asks for `body` to run at the next slot; replaces a body not yet run. Loop thread only.
    public func request(
        file: StaticString = #fileID, line: UInt = #line, _ body: @escaping () -> Void
    ) {
        require(loop.isCurrent, "Throttle.request must be called on the loop's thread")
        run.request(body)
        guard !run.isScheduled else { return }
        run.schedule(at: nextSlot(), file: file, line: line) { [unowned self] _ in fire() }
    }

    /// Drops the pending body, if any. Loop thread only.
    public func cancel() {
        require(loop.isCurrent, "Throttle.cancel must be called on the loop's thread")
        run.cancel()
    }

    deinit { run.cancel() }

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
        guard let body = run.take() else { return }
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
    /// The loop it runs on. Loop thread.
    public var loop: MainLoop { run.loop }
    /// How long requests must pause before the last one runs.
    public let quietPeriod: Duration
    /// Requests so far. Loop thread.
    public var requests: Int { run.requests }
    /// Runs so far. Loop thread.
    public var executions: Int { run.executions }

    private var run: PendingRun

    /// A debouncer on `loop` with a positive `quietPeriod`, firing in `modes`. Loop thread only.
    public init(loop: MainLoop, quietPeriod: Duration, modes: [MainLoop.Mode] = [.common]) {
        require(quietPeriod > .zero, "Debounce quietPeriod must be positive, got \(quietPeriod)")
        self.quietPeriod = quietPeriod
        run = PendingRun(loop: loop, modes: modes, label: "Debounce")
    }

    /// Whether a body waits for the quiet period. Loop thread.
    public var isPending: Bool { run.body != nil }

    /// Replaces the pending body with `body` and restarts the quiet period. Loop thread only.
    public func request(
        file: StaticString = #fileID, line: UInt = #line, _ body: @escaping () -> Void
    ) {
        require(loop.isCurrent, "Debounce.request must be called on the loop's thread")
        run.request(body)
        run.schedule(at: sw_monotonic_ns().saturatingAdding(quietPeriod.nanoseconds), file: file, line: line) {
            [unowned self] _ in fire()
        }
    }

    /// Runs the pending body now, if any, instead of after the quiet period. Loop thread only.
    public func flush() {
        require(loop.isCurrent, "Debounce.flush must be called on the loop's thread")
        fire()
    }

    /// Drops the pending body, if any. Loop thread only.
    public func cancel() {
        require(loop.isCurrent, "Debounce.cancel must be called on the loop's thread")
        run.cancel()
    }

    deinit { run.cancel() }

    private func fire() {
        run.take()?()
    }
}

/// What `Throttle` and `Debounce` share: the latest requested body, the one-shot timer that
/// will run it, and the counts of requests and runs. Loop thread only.
private struct PendingRun {
    let loop: MainLoop
    let modes: [MainLoop.Mode]
    /// The timer's label, the owner's type.
    let label: StaticString
    private(set) var requests = 0
    private(set) var executions = 0
    /// The body the next run runs, if any; a request replaces it.
    private(set) var body: (() -> Void)?
    private var timer: MainLoop.Timer?

    init(loop: MainLoop, modes: [MainLoop.Mode], label: StaticString) {
        self.loop = loop
        self.modes = modes
        self.label = label
    }

    var isScheduled: Bool { timer != nil }

    /// Counts a request and makes `body` the one the next run runs.
    mutating func request(_ body: @escaping () -> Void) {
        requests += 1
        self.body = body
    }

    /// Schedules the run for `deadline` in `modes`, at the requester's `file` and `line`,
    /// replacing a run scheduled before.
    mutating func schedule(
        at deadline: UInt64, file: StaticString, line: UInt, _ fire: @escaping (MainLoop.Timer) -> Void
    ) {
        timer?.cancel()
        timer = loop.schedule(
            at: deadline, intervalNanos: nil, toleranceNanos: 0, modes: modes,
            site: CalloutSite(kind: .timer, label: label, file: file, line: UInt32(truncatingIfNeeded: line)),
            fire)
    }

    /// Drops the body and the scheduled run.
    mutating func cancel() {
        body = nil
        timer?.cancel()
        timer = nil
    }

    /// Ends the wait: the body to run now, counted as a run, or nil when none is pending.
    mutating func take() -> (() -> Void)? {
        let body = body
        cancel()
        if body != nil { executions += 1 }
        return body
    }
}
