import Stallwatch
import StallwatchCore

/// Coalesces repeated "needs update" requests into one run each per commit, as Core
/// Animation's transactions (and YYTransaction) do: requests are deduplicated by
/// (target, action) and run at `beforeWaiting` and `exit` — when the loop has finished its
/// work and is about to sleep or leave a run — in the order they were first requested, after
/// every other observer of the same activity (order `Int.max`). Targets are held weakly: the
/// actions of a freed target are skipped.
///
/// Create it, request and invalidate on the loop thread; actions run there, each as a callout
/// of its own named by its action and the place that first requested it, isolated like the code
/// that requests them (main-actor code on `MainLoop.main`: they may use main-actor state).
public final class LoopTransactions {
    /// The loop it commits on.
    public let loop: MainLoop
    /// Commits that ran at least one action.
    public private(set) var commits = 0

    private struct Key: Hashable {
        let target: ObjectIdentifier
        let action: String
    }

    private final class Entry {
        weak var target: AnyObject?
        var body: (AnyObject) -> Void
        let site: CalloutSite

        init(target: AnyObject, body: @escaping (AnyObject) -> Void, site: CalloutSite) {
            self.target = target
            self.body = body
            self.site = site
        }
    }

    private var pending: [Entry] = []
    private var index: [Key: Entry] = [:]
    private var observer: MainLoop.Observer?

    /// Transactions for `loop`, committed at `activities` in `modes`. Loop thread only.
    public init(
        loop: MainLoop, activities: MainLoop.Activities = [.beforeWaiting, .exit], modes: [MainLoop.Mode] = [.common]
    ) {
        require(loop.isCurrent, "LoopTransactions must be created on the loop's thread")
        require(!activities.isEmpty, "LoopTransactions needs at least one activity to commit at")
        self.loop = loop
        observer = loop.addObserver(activities, order: Int.max, modes: modes, label: "LoopTransactions.commit") {
            [unowned self] _, activity in commit(activity)
        }
    }

    deinit { observer?.remove() }

    /// Actions waiting for the next commit.
    public var pendingCount: Int { pending.count { $0.target != nil } }

    /// Requests `action` on `target` at the next commit. Repeated requests for the same
    /// (target, action) before it run once, at the position of the first request, with the
    /// latest `body`. A request made during a commit runs at the next one. Loop thread only.
    public func request<Target: AnyObject>(
        _ target: Target,
        _ action: StaticString,
        file: StaticString = #fileID,
        line: UInt = #line,
        _ body: @escaping (Target) -> Void
    ) {
        require(loop.isCurrent, "LoopTransactions.request must be called on the loop's thread")
        require(observer != nil, "LoopTransactions.request after invalidate()")
        let key = Key(target: ObjectIdentifier(target), action: action.description)
        // The identifier of a freed target can be reused by a new object: only a live entry
        // for this very object coalesces.
        let erased: (AnyObject) -> Void = { body($0 as! Target) }
        if let entry = index[key], entry.target === target {
            entry.body = erased
            return
        }
        let entry = Entry(
            target: target, body: erased,
            site: CalloutSite(kind: .observer, label: action, file: file, line: UInt32(truncatingIfNeeded: line)))
        index[key] = entry
        pending.append(entry)
    }

    /// Stops committing; pending actions are dropped. Loop thread only.
    public func invalidate() {
        pending = []
        index = [:]
        observer?.remove()
        observer = nil
    }

    private func commit(_ activity: LoopActivity) {
        guard !pending.isEmpty else { return }
        let batch = pending
        pending = []
        index = [:]
        var ran = false
        for entry in batch {
            guard let target = entry.target else { continue }
            ran = true
            loop.subCallout(entry.site, phase: activity) { entry.body(target) }
        }
        if ran { commits += 1 }
        // Actions requested by actions: the loop is about to sleep, so make it come round
        // once more and commit them rather than leave them until something else wakes it.
        if !pending.isEmpty && activity == .beforeWaiting { loop.wakeUp() }
    }
}
