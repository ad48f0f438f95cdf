import NIOPosix
import Stallwatch

/// A swift-nio metrics delegate that gives each event loop's ticks to `HeartbeatMonitor`, so a
/// stall of a loop watched with `watch(_:labelPrefix:)` is timed by the loop itself: a task (an
/// `execute`, a scheduled task, a future's callback) that blocks its loop is a stall exactly as
/// long as its tick; a handler that blocks in I/O event handling ends exactly when the loop's next
/// tick begins (docs/watchdog.md, "Exact durations from the executor's ticks"). Give it to the
/// group: `MultiThreadedEventLoopGroup(numberOfThreads: 2, metricsDelegate: StallwatchTicks())`.
/// It costs a tick a thread-local read and one load, and the delegate call itself: swift-nio
/// reads the clock twice per tick only when a delegate is set.
public struct StallwatchTicks: NIOEventLoopMetricsDelegate {
    /// A delegate for every loop of a group.
    public init() {}

    /// On the loop's thread, after each tick.
    public func processedTick(info: NIOEventLoopTickInfo) {
        HeartbeatMonitor.tickEnded(start: info.startTime.uptimeNanoseconds, end: info.endTime.uptimeNanoseconds)
    }
}
