import CStallwatchShims
import Dispatch
import Glibc
import StallwatchCore
import Synchronization

/// An instrumented run loop: posted closures, timers, file-descriptor sources and observers,
/// run in modes like CFRunLoop, with every piece of work ("callout") published for
/// `StallMonitor`.
///
/// A loop is bound to one thread: `MainLoop.main` to the process's main thread (and it also
/// services the libdispatch main queue, so `DispatchQueue.main` and `@MainActor` work runs
/// inside it), `MainLoop()` to the thread that creates it. `post(_:)`, `stop()` and
/// `wakeUp()` may be called from any thread; everything else only on the loop's thread.
///
/// Callouts of `MainLoop.main` are main-actor code. A timer, source or observer closure is
/// isolated like the code that registers it (on the loop's thread), so main-actor code uses
/// main-actor state in it; what crosses threads goes through `mainActor` (`@MainActor`
/// closures). Other loops take `@Sendable` closures for what crosses threads.
public final class MainLoop: @unchecked Sendable {
    /// The loop of the process's main thread. Run it from `main` (top-level code), e.g.
    /// `MainLoop.main.run()`. Any thread may use it to `post`.
    public static let main = MainLoop(thread: sw_main_thread(), isMain: true)

    let owner: pthread_t
    let isMain: Bool
    /// The kernel thread id of the loop's thread (what /proc/self/task/<tid> names). Any thread.
    public let threadID: Int32
    let board = CalloutBoard()
    let annotations = AnnotationScopes()

    // Cross-thread posting and wake-up (see `post` for the protocol).
    let remote = RemoteQueue()
    let wakeFD: Int32
    let sleeping = Atomic<Bool>(false)
    let wakePending = Atomic<Bool>(false)
    let stopRequested = Atomic<Bool>(false)

    // Loop-thread state.
    let local = JobRing.make()
    var spareJobs: [Job] = []
    var modeStates: [ModeState?] = []
    var commonModes: Set<UInt16> = [Mode.default.id, Mode.tracking.id]
    var commonItems: [ModeItem] = []
    var mainQueueFD: Int32 = -1
    var runDepth = 0
    var preparedThread = false
    var eventBuffers: [Epoll.EventBuffer] = []
    var timerSequence: UInt64 = 0
    let calloutState: UnsafeMutablePointer<CalloutState> = {
        let state = UnsafeMutablePointer<CalloutState>.allocate(capacity: 1)
        state.initialize(to: CalloutState())
        return state
    }()

    /// Posted closures run per iteration at most; the rest wait for the next iteration so
    /// timers and sources are never starved by a closure that keeps re-posting itself.
    static let postsPerIteration = 128
    static let eventCapacity: Int32 = 64

    /// A loop bound to the calling thread. Run it on this thread with `run()`.
    public convenience init() {
        self.init(thread: pthread_self(), isMain: false)
    }

    init(thread: pthread_t, isMain: Bool) {
        owner = thread
        self.isMain = isMain
        threadID = isMain ? getpid() : sw_gettid()
        wakeFD = Epoll.makeEventFD()
        if isMain { mainQueueFD = sw_dispatch_main_queue_handle() }
    }

    deinit {
        for case let state? in modeStates {
            // Live timers, sources and observers and their mode states refer to each other; with
            // the loop gone nothing can run them, so drop the states' side of each cycle.
            state.timers = TimerHeap()
            state.sources = [:]
            state.observers = []
            state.epoll.close()
        }
        for buffer in eventBuffers { buffer.deallocate() }
        close(wakeFD)
        JobRing.destroy(local)
        calloutState.deallocate()
    }

    /// CLOCK_MONOTONIC in nanoseconds: the clock of timers, frame ticks and stall records.
    /// Any thread.
    public static func monotonicNanos() -> UInt64 { sw_monotonic_ns() }

    /// Whether the caller is on this loop's thread. Any thread.
    public var isCurrent: Bool { pthread_equal(pthread_self(), owner) != 0 }

    /// Queues `body` to run once on the loop thread, in a common mode, FIFO per posting
    /// thread. Any thread. From the loop's own thread it makes no syscall; from another it
    /// writes the loop's eventfd only if the loop is (about to be) waiting.
    ///
    /// `label`, `file` and `line` identify the callout in stall reports. On `MainLoop.main`,
    /// main-actor code posts through `mainActor.post`, whose closure is `@MainActor`.
    public func post(
        label: StaticString? = nil,
        file: StaticString = #fileID,
        line: UInt = #line,
        _ body: @escaping @Sendable () -> Void
    ) {
        let site = CalloutSite(
            kind: .post, label: label, file: file, line: UInt32(truncatingIfNeeded: line))
        if pthread_equal(pthread_self(), owner) != 0 {
            local.pointee.append(Job(body: body, site: site))
        } else {
            remote.append(Job(body: body, site: site))
            wakeIfWaiting()
        }
    }

    /// Makes the innermost running `run` return `.stopped` at its next iteration boundary.
    /// Any thread.
    public func stop() {
        stopRequested.store(true, ordering: .sequentiallyConsistent)
        wakeUp()
    }

    /// Interrupts the loop's wait (if it waits) so it runs another iteration. Any thread.
    public func wakeUp() {
        if !wakePending.exchange(true, ordering: .sequentiallyConsistent) {
            Epoll.signalEventFD(wakeFD)
        }
    }

    // The loop stores `sleeping` before checking `remote.count`; a producer increments the
    // count before loading `sleeping`. With both sequentially consistent, at least one side
    // sees the other: either the loop skips the wait or the producer writes the eventfd.
    @inline(__always)
    func wakeIfWaiting() {
        if sleeping.load(ordering: .sequentiallyConsistent) { wakeUp() }
    }

    /// Adds `mode` to the common set: items registered for `.common` join it. Loop thread.
    public func addCommonMode(_ mode: Mode) {
        require(isCurrent, "MainLoop.addCommonMode must be called on the loop's thread")
        require(mode != .common, "common is the set itself")
        guard commonModes.insert(mode.id).inserted else { return }
        let state = self.state(for: mode)
        state.servicesPosts = true
        if isMain { state.addMainQueue(mainQueueFD) }
        for item in commonItems { item.join(state, loop: self) }
    }

    /// The mode the innermost `run` is running in, if any. Loop thread.
    public internal(set) var currentMode: Mode?
}

/// Something registered in modes: when a mode joins the common set, common items join it.
protocol ModeItem: AnyObject {
    func join(_ state: ModeState, loop: MainLoop)
}

extension MainLoop {
    /// The states for `modes`, expanding `.common`; remembers `item` for common modes added later.
    func states(for modes: [Mode], item: ModeItem) -> [ModeState] {
        var result: [ModeState] = []
        for mode in modes {
            if mode == .common {
                commonItems.append(item)
                for id in commonModes.sorted() where !result.contains(where: { $0.mode.id == id }) {
                    result.append(state(for: Mode(id: id)))
                }
            } else if !result.contains(where: { $0.mode == mode }) {
                result.append(state(for: mode))
            }
        }
        return result
    }

    func state(for mode: Mode) -> ModeState {
        let index = Int(mode.id)
        if index >= modeStates.count {
            modeStates += Array(repeating: nil, count: index + 1 - modeStates.count)
        }
        if let state = modeStates[index] { return state }
        require(mode != .common, "run the loop in a mode, not in the common set")
        let state = ModeState(mode: mode, wakeFD: wakeFD)
        if commonModes.contains(mode.id) {
            state.servicesPosts = true
            if isMain { state.addMainQueue(mainQueueFD) }
        }
        modeStates[index] = state
        return state
    }

    func forgetCommonItem(_ item: ModeItem) {
        commonItems.removeAll { $0 === item }
    }
}
