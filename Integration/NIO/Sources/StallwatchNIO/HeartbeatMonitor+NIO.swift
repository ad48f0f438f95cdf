import NIOCore
import NIOPosix
import Stallwatch

extension HeartbeatMonitor {
    /// Watches every event loop of `group`, each labelled `prefix-N` (its stalls carry the
    /// label): a heartbeat is a task the loop runs with `execute`, so an idle loop is woken
    /// only by the monitor's few checks. Call before `start()`. Any thread.
    @discardableResult
    public func watch(_ group: MultiThreadedEventLoopGroup, labelPrefix prefix: String = "event-loop")
        -> [Executor]
    {
        var loops: [any EventLoop] = []
        for loop in group.makeIterator() { loops.append(loop) }
        return loops.enumerated().map { index, loop in
            watch(label: "\(prefix)-\(index)") { loop.execute($0) }
        }
    }
}
