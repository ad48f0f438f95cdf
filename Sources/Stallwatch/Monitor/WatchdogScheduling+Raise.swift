import CStallwatchShims

extension StallMonitor.WatchdogScheduling {
    /// Gives the calling (watchdog) thread the first scheduling it is allowed: SCHED_FIFO
    /// priority 1 (root or CAP_SYS_NICE), else nice −10, else a 100 µs slice (any user, Linux
    /// 6.12+), else none; returns which. A thread it creates does not inherit it (the app's
    /// libdispatch workers it starts by queueing a heartbeat run as the app's). Shared by
    /// `StallMonitor` and `HeartbeatMonitor`, whose watchdogs only sleep or sample.
    static func raiseCurrentThread() -> Self {
        switch sw_raise_thread_scheduling(100_000) {
        case 1: .realTime
        case 2: .raisedNice
        case 3: .shortSlice
        default: .normal
        }
    }
}
