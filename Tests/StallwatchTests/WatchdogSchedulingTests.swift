// The watchdog's raised scheduling stays the watchdog's: a thread it creates (libdispatch starts
// a worker on the thread that queues work for it) starts with the default policy and nice.
import CStallwatchShims
import Foundation
import StallwatchCore
import Testing

@testable import Stallwatch

@Suite struct WatchdogSchedulingTests {
    struct Seen: Sendable {
        var raised: StallMonitor.WatchdogScheduling
        var policy: Int32
        var nice: Int32
        var childPolicy: Int32
        var childNice: Int32
    }

    /// The calling thread's policy (without SCHED_RESET_ON_FORK) and nice value.
    static func scheduling() -> (policy: Int32, nice: Int32) {
        errno = 0
        let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(sw_gettid()))
        return (sched_getscheduler(0) & ~0x4000_0000, nice)
    }

    @Test func aThreadTheRaisedThreadCreatesStartsWithTheDefaultScheduling() throws {
        let before = Self.scheduling()
        let seen = Locked<Seen?>(nil)
        let done = DispatchSemaphore(value: 0)
        let watchdog = Thread {
            let raised = StallMonitor.WatchdogScheduling.raiseCurrentThread()
            let own = Self.scheduling()
            let child = Thread {
                let childs = Self.scheduling()
                seen.withLock {
                    $0 = Seen(
                        raised: raised, policy: own.policy, nice: own.nice, childPolicy: childs.policy,
                        childNice: childs.nice)
                }
                done.signal()
            }
            child.start()
        }
        watchdog.start()
        done.wait()
        let result = try #require(seen.withLock { $0 })
        // Raised as this process may (SCHED_FIFO as root, as CI runs).
        switch result.raised {
        case .realTime: #expect(result.policy == 1, "the raised thread's policy is SCHED_FIFO")
        case .raisedNice: #expect(result.nice == -10)
        case .shortSlice, .normal: break
        }
        #expect(result.childPolicy == 0, "the child's policy: \(result.childPolicy), not SCHED_OTHER (0)")
        #expect(result.childNice == max(0, before.nice), "the child's nice: \(result.childNice)")
    }
}
