import StallwatchCore

extension MainLoop {
    /// The activities an observer subscribes to (CFRunLoop's, in the order an iteration
    /// passes them). A plain value; any thread.
    public struct Activities: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Subscribes to one activity.
        public init(_ activity: LoopActivity) { rawValue = 1 << (activity.rawValue - 1) }
        /// The loop is entered (once per run).
        public static let entry = Activities(.entry)
        /// The loop is about to fire due timers.
        public static let beforeTimers = Activities(.beforeTimers)
        /// The loop is about to run posted closures.
        public static let beforeSources = Activities(.beforeSources)
        /// The loop is about to block in its wait.
        public static let beforeWaiting = Activities(.beforeWaiting)
        /// The loop has woken from its wait.
        public static let afterWaiting = Activities(.afterWaiting)
        /// The loop is left (once per run).
        public static let exit = Activities(.exit)
        /// Every activity.
        public static let all: Activities = [
            .entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit,
        ]
    }

    /// An observer of the loop's activities. Observers with a lower `order` run first; equal
    /// orders run in the order they were added. Loop thread only.
    public final class Observer: ModeItem {
        /// What it is called for.
        public let activities: Activities
        /// Lower runs first.
        public let order: Int
        /// Whether it stays after its first call.
        public let repeats: Bool
        /// False once removed.
        public private(set) var isValid = true

        /// Dropped on removal, so nothing the closure captured outlives the observer in a cycle.
        private(set) var body: ((Observer, LoopActivity) -> Void)?
        let site: CalloutSite
        weak var loop: MainLoop?
        var states: [ModeState] = []

        init(
            activities: Activities, order: Int, repeats: Bool, loop: MainLoop, site: CalloutSite,
            body: @escaping (Observer, LoopActivity) -> Void
        ) {
            self.activities = activities
            self.order = order
            self.repeats = repeats
            self.loop = loop
            self.site = site
            self.body = body
        }

        /// Removes the observer; safe from inside its own (or another observer's) callback.
        public func remove() {
            guard isValid else { return }
            isValid = false
            body = nil
            for state in states {
                state.observers.removeAll { $0 === self }
                state.recomputeObserverMask()
            }
            states = []
            loop?.forgetCommonItem(self)
        }

        func join(_ state: ModeState, loop: MainLoop) {
            guard isValid, !states.contains(where: { $0 === state }) else { return }
            states.append(state)
            // Stable insertion by order: after every observer of the same order.
            let index = state.observers.firstIndex { $0.order > order } ?? state.observers.count
            state.observers.insert(self, at: index)
            state.recomputeObserverMask()
        }
    }

    /// Calls `body` on the loop thread at each of `activities` in `modes`. Loop thread only;
    /// `body` is isolated like the caller (main-actor code, on `MainLoop.main`: it may use
    /// main-actor state).
    @discardableResult
    public func addObserver(
        _ activities: Activities,
        order: Int = 0,
        repeats: Bool = true,
        modes: [Mode] = [.default],
        label: StaticString? = nil,
        file: StaticString = #fileID,
        line: UInt = #line,
        _ body: @escaping (Observer, LoopActivity) -> Void
    ) -> Observer {
        require(isCurrent, "MainLoop.addObserver must be called on the loop's thread")
        let observer = Observer(
            activities: activities, order: order, repeats: repeats, loop: self,
            site: CalloutSite(
                kind: .observer, label: label, file: file, line: UInt32(truncatingIfNeeded: line)),
            body: body)
        for state in states(for: modes, item: observer) { observer.join(state, loop: self) }
        return observer
    }

    @inline(__always)
    func notify(_ activity: LoopActivity, _ state: ModeState) {
        let bit = Activities(activity)
        guard state.observerMask.contains(bit) else { return }
        notifySlow(activity, bit, state)
    }

    func notifySlow(_ activity: LoopActivity, _ bit: Activities, _ state: ModeState) {
        // Iterate a snapshot: callbacks may add or remove observers (the array is replaced,
        // not mutated in place, and removed observers are skipped by `isValid`).
        let snapshot = state.observers
        for observer in snapshot where observer.isValid && observer.activities.contains(bit) {
            guard let body = observer.body else { continue }
            if !observer.repeats { observer.remove() }
            callout(observer.site, phase: activity, mode: state.mode) {
                body(observer, activity)
            }
        }
    }
}
