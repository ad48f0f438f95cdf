import CStallwatchShims
import Stallwatch
import StallwatchCore

/// Processes a large collection on the loop in slices bounded by *time*, one slice per loop
/// iteration, so timers, descriptors, posts and frame ticks run between slices and no slice
/// overruns the frame. Create, start and cancel it on the loop thread; `process`, `progress`
/// and `completion` run there too, isolated like the code that creates it (main-actor code on
/// `MainLoop.main`: they may use main-actor state).
///
/// Batching by a count of items (Texture's `ASRunLoopQueue`) still stalls when some items are
/// slow; a time budget does not, as long as one item is shorter than the budget. A slice
/// always processes at least one item, then stops once `budget` has elapsed on the loop's
/// clock (`MainLoop.monotonicNanos`).
public final class ChunkedTask<Element> {
    /// How the work ended.
    public enum Outcome: Sendable, Equatable {
        /// Every item was processed.
        case finished
        /// `cancel()` was called first.
        case cancelled
    }

    /// The loop it runs on.
    public let loop: MainLoop
    /// The time one slice may take.
    public let budget: Duration
    /// Items processed so far.
    public private(set) var processed = 0
    /// Slices run so far.
    public private(set) var slices = 0
    /// The longest slice so far (a slice overruns the budget by at most one item).
    public private(set) var longestSlice: Duration = .zero
    /// Set once the work finished or was cancelled.
    public private(set) var outcome: Outcome?

    private var items: [Element]
    private let budgetNanos: UInt64
    private let modes: [MainLoop.Mode]
    private let site: CalloutSite
    private let process: (Element) -> Void
    private let progress: ((_ processed: Int, _ total: Int) -> Void)?
    private let completion: ((Outcome) -> Void)?
    private var timer: MainLoop.Timer?
    private var started = false

    /// Work over `items` for `loop`: `process` runs once per item, in order; `progress` after
    /// each slice; `completion` once, when every item is processed or on `cancel()`. Call
    /// `start()`. Loop thread only.
    /// - Parameters:
    ///   - budget: the time one slice may take (positive; 4 ms of a 16.7 ms frame by default).
    ///   - modes: the modes slices run in (all common modes by default, so work continues
    ///     while tracking).
    public init(
        loop: MainLoop,
        items: some Sequence<Element>,
        budget: Duration = .milliseconds(4),
        modes: [MainLoop.Mode] = [.common],
        label: StaticString? = nil,
        file: StaticString = #fileID,
        line: UInt = #line,
        process: @escaping (Element) -> Void,
        progress: ((_ processed: Int, _ total: Int) -> Void)? = nil,
        completion: ((Outcome) -> Void)? = nil
    ) {
        require(budget > .zero, "ChunkedTask budget must be positive, got \(budget)")
        require(!modes.isEmpty, "ChunkedTask needs at least one mode")
        self.loop = loop
        self.items = Array(items)
        self.total = self.items.count
        self.budget = budget
        self.budgetNanos = budget.nanoseconds
        self.modes = modes
        self.site = CalloutSite(
            kind: .timer, label: label ?? "ChunkedTask slice", file: file, line: UInt32(truncatingIfNeeded: line))
        self.process = process
        self.progress = progress
        self.completion = completion
    }

    /// The number of items.
    public let total: Int

    /// Whether the work finished or was cancelled.
    public var isFinished: Bool { outcome != nil }

    /// Starts processing at the loop's next iteration. Calling it again does nothing. Loop
    /// thread only.
    public func start() {
        require(loop.isCurrent, "ChunkedTask.start must be called on the loop's thread")
        guard !started else { return }
        started = true
        scheduleSlice()
    }

    /// Stops before the next item; `completion` receives `.cancelled` now. Does nothing once
    /// finished. Safe from inside `process`. Loop thread only.
    public func cancel() {
        require(loop.isCurrent, "ChunkedTask.cancel must be called on the loop's thread")
        guard outcome == nil else { return }
        finish(.cancelled)
    }

    // A zero-delay one-shot timer: it fires at the next iteration's timer phase, after the
    // loop has polled its descriptors, never twice within one iteration.
    private func scheduleSlice() {
        timer = loop.schedule(
            at: sw_monotonic_ns(), intervalNanos: nil, toleranceNanos: 0, modes: modes, site: site
        ) { [self] _ in runSlice() }
    }

    private func runSlice() {
        timer = nil
        guard outcome == nil else { return }
        let start = sw_monotonic_ns()
        slices += 1
        while processed < total && outcome == nil {
            process(items[processed])
            processed += 1
            if sw_monotonic_ns() &- start >= budgetNanos { break }
        }
        longestSlice = max(longestSlice, .nanoseconds(Int64(clamping: sw_monotonic_ns() &- start)))
        guard outcome == nil else { return }
        progress?(processed, total)
        if processed == total { finish(.finished) } else { scheduleSlice() }
    }

    private func finish(_ result: Outcome) {
        outcome = result
        timer?.cancel()
        timer = nil
        items = []  // the work is done: release the elements now, not when the task is freed
        completion?(result)
    }
}
