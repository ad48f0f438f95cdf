import CStallwatchShims
import Stallwatch
import StallwatchCore

/// What an idle task may spend: the time until the loop has other work, as the web's
/// `requestIdleCallback` gives it. A plain value; any thread.
public struct IdleDeadline: Sendable {
    /// The end of the idle period (CLOCK_MONOTONIC ns).
    public let deadlineNanos: UInt64
    /// True when the task runs because its timeout passed, not because the loop was idle
    /// (then `timeRemaining` is zero: do the least work that cannot wait).
    public let didTimeout: Bool

    /// The time left in the idle period, read from the loop's clock; zero once it passed.
    public var timeRemaining: Duration {
        let now = sw_monotonic_ns()
        return now >= deadlineNanos ? .zero : .nanoseconds(Int64(clamping: deadlineNanos - now))
    }
}

/// A task queued on an `IdleScheduler`. Loop thread only.
public final class IdleTask {
    /// Whether it was cancelled before it ran.
    public private(set) var isCancelled = false
    /// Whether it has run.
    public internal(set) var hasRun = false

    let body: (IdleDeadline) -> Void
    let site: CalloutSite
    var timeoutTimer: MainLoop.Timer?
    weak var scheduler: IdleScheduler?

    init(body: @escaping (IdleDeadline) -> Void, site: CalloutSite) {
        self.body = body
        self.site = site
    }

    /// Removes it from the queue if it has not run. Loop thread only.
    public func cancel() {
        guard !hasRun, !isCancelled else { return }
        isCancelled = true
        timeoutTimer?.cancel()
        timeoutTimer = nil
        scheduler?.remove(self)
    }
}

/// Low-priority work that runs only when the loop is about to wait (`beforeWaiting`), each
/// task given a deadline = min(the next timer, which includes the next `FrameClock` tick, and
/// `maximumIdlePeriod`) as the web's `requestIdleCallback` does. A task scheduled with a
/// `timeout` runs anyway (with `didTimeout`) once the timeout passes without an idle period.
///
/// Tasks run in the order scheduled, each as a callout of its own (a slow one is reported at
/// the place that scheduled it); a task that needs more time schedules a continuation of
/// itself. Create, schedule and cancel on the loop thread; tasks run there, isolated like the
/// code that schedules them (main-actor code on `MainLoop.main`: they may use main-actor state).
public final class IdleScheduler {
    /// The loop it runs on.
    public let loop: MainLoop
    /// The longest idle period handed out when no timer is due sooner.
    public let maximumIdlePeriod: Duration
    /// Idle periods that ran at least one task.
    public private(set) var idlePeriods = 0

    private let maximumIdleNanos: UInt64
    private let modes: [MainLoop.Mode]
    private var queue: [IdleTask] = []
    private var observer: MainLoop.Observer?

    /// A scheduler for `loop` that runs tasks when the loop is idle in one of `modes`. Loop
    /// thread only.
    /// - Parameter maximumIdlePeriod: positive; 50 ms by default (what browsers use, so input
    ///   arriving during an idle period waits at most that long).
    public init(
        loop: MainLoop, maximumIdlePeriod: Duration = .milliseconds(50), modes: [MainLoop.Mode] = [.default]
    ) {
        require(
            maximumIdlePeriod > .zero, "IdleScheduler maximumIdlePeriod must be positive, got \(maximumIdlePeriod)")
        require(loop.isCurrent, "IdleScheduler must be created on the loop's thread")
        self.loop = loop
        self.maximumIdlePeriod = maximumIdlePeriod
        self.maximumIdleNanos = maximumIdlePeriod.nanoseconds
        self.modes = modes
        // Just before any run-loop transactions (order Int.max), so what idle tasks change is
        // committed in the same pass.
        observer = loop.addObserver(.beforeWaiting, order: Int.max - 1, modes: modes, label: "IdleScheduler") {
            [unowned self] _, _ in runIdlePeriod()
        }
    }

    deinit {
        for task in queue { task.timeoutTimer?.cancel() }
        observer?.remove()
    }

    /// Tasks waiting to run.
    public var pendingCount: Int { queue.count }

    /// Queues `body` to run in an idle period, or once `timeout` has passed (positive) if none
    /// came by then. Loop thread only.
    @discardableResult
    public func schedule(
        timeout: Duration? = nil,
        label: StaticString? = nil,
        file: StaticString = #fileID,
        line: UInt = #line,
        _ body: @escaping (IdleDeadline) -> Void
    ) -> IdleTask {
        require(loop.isCurrent, "IdleScheduler.schedule must be called on the loop's thread")
        require(observer != nil, "IdleScheduler.schedule after invalidate()")
        if let timeout { require(timeout > .zero, "IdleScheduler timeout must be positive, got \(timeout)") }
        let site = CalloutSite(
            kind: .observer, label: label ?? "idle task", file: file, line: UInt32(truncatingIfNeeded: line))
        let task = IdleTask(body: body, site: site)
        task.scheduler = self
        if let timeout {
            var timerSite = site
            timerSite.kind = .timer
            task.timeoutTimer = loop.schedule(
                at: sw_monotonic_ns().saturatingAdding(timeout.nanoseconds), intervalNanos: nil, toleranceNanos: 0,
                modes: modes,
                site: timerSite
            ) { [unowned self, task] _ in
                task.timeoutTimer = nil
                guard !task.hasRun, !task.isCancelled else { return }
                remove(task)
                run(task, IdleDeadline(deadlineNanos: sw_monotonic_ns(), didTimeout: true))
            }
        }
        queue.append(task)
        return task
    }

    /// Drops every pending task and stops observing the loop. Loop thread only.
    public func invalidate() {
        for task in queue { task.cancel() }
        queue = []
        observer?.remove()
        observer = nil
    }

    func remove(_ task: IdleTask) {
        queue.removeAll { $0 === task }
    }

    private func runIdlePeriod() {
        guard !queue.isEmpty, let mode = loop.currentMode else { return }
        let now = sw_monotonic_ns()
        let cap = now.saturatingAdding(maximumIdleNanos)
        let nextTimer = loop.nextTimerWake(in: mode) ?? UInt64.max
        let deadline = min(nextTimer, cap)
        guard now < deadline else { return }
        idlePeriods += 1
        let idle = IdleDeadline(deadlineNanos: deadline, didTimeout: false)
        // Only the tasks queued before the period began run in it, as with requestIdleCallback:
        // one that queues itself again waits for the next period, so it cannot fill this one
        // and make every idle period an iteration over the budget.
        var due = queue.count
        while due > 0 && !queue.isEmpty && sw_monotonic_ns() < deadline {
            due -= 1
            let task = queue.removeFirst()
            task.timeoutTimer?.cancel()
            task.timeoutTimer = nil
            run(task, idle)
        }
        // The cap ended this period, or its tasks did with more queued since: no timer will
        // wake the loop, so ask for another iteration (and another idle period) instead of
        // sleeping with work queued. When a timer ends it, the loop comes back after that timer.
        if !queue.isEmpty && (deadline == cap || sw_monotonic_ns() < deadline) { loop.wakeUp() }
    }

    private func run(_ task: IdleTask, _ deadline: IdleDeadline) {
        task.hasRun = true
        loop.subCallout(task.site, phase: .beforeWaiting) { task.body(deadline) }
    }
}
