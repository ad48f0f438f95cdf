/// Everything the loop keeps per mode. Loop thread only.
final class ModeState {
    let mode: MainLoop.Mode
    let epoll: Epoll
    var timers = TimerHeap()
    /// Sorted by order; replaced (not mutated) on change, so a notification iterates a
    /// snapshot while observers add or remove themselves.
    var observers: [MainLoop.Observer] = []
    var observerMask: MainLoop.Activities = []
    var sources: [Int32: FDEntry] = [:]
    var servicesPosts = false
    /// Live timers and sources: a mode with none (and no posts) has nothing to run.
    var timerCount = 0

    static let wakeTag = UInt64.max
    static let mainQueueTag = UInt64.max - 1

    init(mode: MainLoop.Mode, wakeFD: Int32) {
        self.mode = mode
        do {
            epoll = try Epoll()
            try epoll.add(wakeFD, .readable, tag: Self.wakeTag)
        } catch {
            preconditionFailure("cannot set up the run loop's epoll: \(error)")
        }
    }

    func addMainQueue(_ fd: Int32) {
        guard fd >= 0 else { return }
        try? epoll.add(fd, .readable, tag: Self.mainQueueTag)
    }

    /// Whether running this mode could ever do anything (CFRunLoop's "finished" test).
    var isEmpty: Bool { timerCount == 0 && sources.isEmpty && !servicesPosts }

    func recomputeObserverMask() {
        observerMask = observers.reduce(into: []) { $0.formUnion($1.activities) }
    }
}

/// The sources registered for one fd in one mode (epoll takes each fd once per instance).
struct FDEntry {
    var reader: MainLoop.Source?
    var writer: MainLoop.Source?

    /// What epoll watches the fd for: a reader also wants to hear that the peer hung up.
    var interest: MainLoop.SourceEvents {
        var interest: MainLoop.SourceEvents = []
        if reader != nil { interest.formUnion([.readable, .hangup]) }
        if writer != nil { interest.insert(.writable) }
        return interest
    }
}
