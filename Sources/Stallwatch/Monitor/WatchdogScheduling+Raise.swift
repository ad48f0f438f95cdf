import CStallwatchShims
import Glibc

extension StallMonitor.WatchdogScheduling {
    /// Gives the calling (watchdog) thread the first scheduling it is allowed: SCHED_FIFO
    /// priority 1 (root or CAP_SYS_NICE), else nice −10, else a 100 µs slice (any user, Linux
    /// 6.12+), else none; returns which. Shared by `StallMonitor` and `HeartbeatMonitor`, whose
    /// watchdogs only sleep or sample.
    static func raiseCurrentThread() -> Self {
        var parameters = sched_param(sched_priority: 1)
        if pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters) == 0 { return .realTime }
        if setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(sw_gettid()), -10) == 0 { return .raisedNice }
        if sw_set_thread_slice(100_000) == 0 { return .shortSlice }
        return .normal
    }
}
