import CStallwatchShims
import StallwatchCore

extension MainLoop {
    /// A scheduled timer. Its handle cancels it and counts its fires. A repeating timer fires on
    /// a fixed grid (`start + k × interval`) and never drifts: fires the loop was too busy to
    /// deliver are coalesced into the next one and counted in `skippedFires`.
    /// Loop thread only (use `post` to cancel from elsewhere).
    public final class Timer: ModeItem {
        /// The grid spacing of a repeating timer, in nanoseconds; nil for a one-shot timer.
        public let intervalNanos: UInt64?
        /// How late the loop may fire it, to coalesce wake-ups, in nanoseconds.
        public let toleranceNanos: UInt64
        /// The CLOCK_MONOTONIC time (ns) of the next fire (of the last, once invalid).
        public private(set) var deadline: UInt64
        /// Grid index of the next fire (0 for the first).
        public private(set) var fireIndex: UInt64 = 0
        /// Fires delivered so far.
        public private(set) var fireCount: UInt64 = 0
        /// Grid points passed over because the loop was busy.
        public private(set) var skippedFires: UInt64 = 0
        /// False once cancelled or, for a one-shot timer, fired.
        public private(set) var isValid = true

        let origin: UInt64
        /// Dropped once the timer is invalid, so nothing its closure captured (often the loop)
        /// outlives it in a cycle through the loop's timer heap.
        private(set) var body: ((Timer) -> Void)?
        let site: CalloutSite
        let order: UInt64
        var generation: UInt64 = 0
        weak var loop: MainLoop?
        var states: [ModeState] = []

        init(
            loop: MainLoop, deadline: UInt64, interval: UInt64?, tolerance: UInt64, order: UInt64,
            site: CalloutSite,
            body: @escaping (Timer) -> Void
        ) {
            self.loop = loop
            self.origin = deadline
            self.deadline = deadline
            self.intervalNanos = interval
            self.toleranceNanos = tolerance
            self.order = order
            self.site = site
            self.body = body
        }

        /// Cancels the timer; it will not fire again. Safe from inside its own callback.
        public func cancel() {
            guard isValid else { return }
            isValid = false
            body = nil
            for state in states { state.timerCount -= 1 }
            states = []
            loop?.forgetCommonItem(self)
        }

        func join(_ state: ModeState, loop: MainLoop) {
            guard isValid, !states.contains(where: { $0 === state }) else { return }
            states.append(state)
            state.timerCount += 1
            state.timers.push(
                TimerHeap.Entry(deadline: deadline, order: order, generation: generation, timer: self))
        }

        /// Called by the loop just before the callout: moves to the next grid point after `now`.
        func advance(now: UInt64) {
            fireCount += 1
            guard let interval = intervalNanos else {
                isValid = false
                body = nil
                for state in states { state.timerCount -= 1 }
                states = []
                loop?.forgetCommonItem(self)
                return
            }
            let due = fireIndex
            let next = now < origin ? due + 1 : max(due + 1, (now - origin) / interval + 1)
            skippedFires += next - due - 1
            fireIndex = next
            // A grid point past the clock (a huge interval) is never: saturate, not trap.
            deadline = origin.saturatingAdding(next.saturatingMultiplied(by: interval))
            generation += 1
            for state in states {
                state.timers.push(
                    TimerHeap.Entry(deadline: deadline, order: order, generation: generation, timer: self))
            }
        }
    }

    /// Schedules `body` to run on the loop thread `delay` from now, and then every `interval`
    /// if given. Loop thread only; `body` is isolated like the caller (main-actor code, on
    /// `MainLoop.main`: it may use main-actor state).
    /// - Parameters:
    ///   - tolerance: how much later the loop may fire it so wake-ups coalesce.
    ///   - modes: the modes it fires in (`[.common]` for all common modes).
    @discardableResult
    public func schedule(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        modes: [Mode] = [.default],
        label: StaticString? = nil,
        file: StaticString = #fileID,
        line: UInt = #line,
        _ body: @escaping (Timer) -> Void
    ) -> Timer {
        schedule(
            at: sw_monotonic_ns().saturatingAdding(delay.nanoseconds), intervalNanos: interval.map(\.nanoseconds),
            toleranceNanos: tolerance.nanoseconds, modes: modes,
            site: CalloutSite(
                kind: .timer, label: label, file: file, line: UInt32(truncatingIfNeeded: line)), body)
    }

    package func schedule(
        at deadline: UInt64, intervalNanos: UInt64?, toleranceNanos: UInt64, modes: [Mode],
        site: CalloutSite,
        _ body: @escaping (Timer) -> Void
    ) -> Timer {
        require(isCurrent, "MainLoop.schedule must be called on the loop's thread")
        require(
            intervalNanos.map { $0 > 0 } ?? true, "a repeating timer needs a positive interval")
        timerSequence += 1
        let timer = Timer(
            loop: self, deadline: deadline, interval: intervalNanos, tolerance: toleranceNanos,
            order: timerSequence,
            site: site, body: body)
        for state in states(for: modes, item: timer) { timer.join(state, loop: self) }
        return timer
    }

    /// Fires every timer of `state` due at `now`, earliest first. Returns whether any fired.
    func fireTimers(_ state: ModeState, now: UInt64) -> Bool {
        var fired = false
        while let top = state.timers.top, top.deadline <= now {
            state.timers.pop()
            let timer = top.timer
            guard timer.isValid, timer.generation == top.generation, let body = timer.body else { continue }
            // Reschedule before calling out, so a nested run inside the callback cannot fire
            // this same grid point again.
            timer.advance(now: now)
            fired = true
            callout(timer.site, phase: .beforeTimers, mode: state.mode) { body(timer) }
        }
        return fired
    }

    /// When the earliest live timer of `mode` wants to fire (deadline plus tolerance), if any.
    /// Loop thread (idle tasks end their period there).
    package func nextTimerWake(in mode: Mode) -> UInt64? { nextTimerWake(state(for: mode)) }

    /// When the earliest live timer of `state` wants to fire (deadline plus tolerance), if any.
    func nextTimerWake(_ state: ModeState) -> UInt64? {
        while let top = state.timers.top {
            if top.timer.isValid && top.timer.generation == top.generation {
                return top.deadline &+ top.timer.toleranceNanos
            }
            state.timers.pop()
        }
        return nil
    }
}

/// A binary min-heap of timer fires ordered by deadline, then registration order. Stale
/// entries (cancelled, or rescheduled: generation changed) are dropped when they surface.
struct TimerHeap {
    struct Entry {
        var deadline: UInt64
        var order: UInt64
        var generation: UInt64
        var timer: MainLoop.Timer

        func precedes(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : order < other.order
        }
    }

    private var entries: [Entry] = []

    var top: Entry? { entries.first }

    mutating func push(_ entry: Entry) {
        entries.append(entry)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].precedes(entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() {
        guard !entries.isEmpty else { return }
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var best = parent
            if left < entries.count && entries[left].precedes(entries[best]) { best = left }
            if right < entries.count && entries[right].precedes(entries[best]) { best = right }
            if best == parent { return }
            entries.swapAt(parent, best)
            parent = best
        }
    }
}
