import CStallwatchShims
import Dispatch
import Foundation
import Stallwatch
import StallwatchCore

/// An event loop that never heard of Stallwatch: a thread blocked in `epoll_wait` on an eventfd,
/// running one posted item per iteration (the loop goes round with a zero timeout while more
/// wait). Its waits are bracketed exactly as the preload library's interposed `epoll_wait`
/// brackets them (`sw_loop_wait_begin`/`_end`, sw_loop_slot.h).
final class EpollExecutor: @unchecked Sendable {
    private let queue = Locked<[@Sendable () -> Void]>([])
    private let epfd = epoll_create1(Int32(EPOLL_CLOEXEC))
    private let wake = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
    /// Each iteration that ran an item, from its wait's return to its next wait's call: the
    /// work item the loop's waits time, and so the recall bench's truth for its item.
    let iterations = Locked<[(start: UInt64, end: UInt64)]>([])

    init(name: String = "bench-epoll") {
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(fd: wake))
        epoll_ctl(epfd, EPOLL_CTL_ADD, wake, &event)
        let ready = DispatchSemaphore(value: 0)
        Thread { [self] in
            sw_set_thread_name(name)
            var pending = false
            // Its first wait makes the thread a loop (timeout 0 at once: it is found as it is made).
            Self.wait(epfd, timeoutMs: 1)
            ready.signal()
            while true {
                Self.wait(epfd, timeoutMs: pending ? 0 : -1)
                let begun = sw_monotonic_ns()
                var count: UInt64 = 0
                _ = read(wake, &count, 8)
                let next: (@Sendable () -> Void)? = queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                next?()
                pending = queue.withLock { !$0.isEmpty }
                if next != nil {
                    let ended = sw_monotonic_ns()
                    iterations.withLock { $0.append((begun, ended)) }
                }
            }
        }.start()
        ready.wait()
    }

    /// `epoll_wait` as the interposed one runs it.
    static func wait(_ epfd: Int32, timeoutMs: Int32) {
        var event = epoll_event()
        sw_loop_wait_begin(Int32(SW_LOOP_EPOLL.rawValue), 0, epfd, timeoutMs != 0 ? 1 : 0, 0)
        _ = epoll_wait(epfd, &event, 1, timeoutMs)
        sw_loop_wait_end(Int32(SW_LOOP_EPOLL.rawValue), 0, epfd)
    }

    func execute(_ task: @escaping @Sendable () -> Void) {
        queue.withLock { $0.append(task) }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }
}

/// `stallwatch-bench loop-wait`: what the interposed waits cost a loop thread per iteration.
enum LoopWaitBenchmarks {
    static func run() {
        // The bookkeeping of one iteration (a wait's end and the next wait's begin) on a thread
        // that is a loop, against the same loop without it; no real wait, so nothing else counts.
        let iterations = 20_000_000
        let fd: Int32 = 1_000_000  // a descriptor nobody has: only the bookkeeping runs
        let measured = Locked<(with: Double, without: Double)>((0, 0))
        let done = DispatchSemaphore(value: 0)
        Thread {
            sw_loop_wait_begin(Int32(SW_LOOP_EPOLL.rawValue), 0, fd, 1, 0)  // becomes a loop
            var best = (with: Double.infinity, without: Double.infinity)
            for _ in 0..<5 {
                var start = sw_monotonic_ns()
                for _ in 0..<iterations {
                    sw_loop_wait_end(Int32(SW_LOOP_EPOLL.rawValue), 0, fd)
                    sw_loop_wait_begin(Int32(SW_LOOP_EPOLL.rawValue), 0, fd, 1, 0)
                }
                best.with = min(best.with, Double(sw_monotonic_ns() - start) / Double(iterations))
                start = sw_monotonic_ns()
                for index in 0..<iterations { blackHole(index) }
                best.without = min(best.without, Double(sw_monotonic_ns() - start) / Double(iterations))
            }
            measured.withLock { $0 = best }
            done.signal()
        }.start()
        done.wait()
        let (with, without) = measured.withLock { $0 }
        Result(
            name: "loop_wait.bookkeeping_ns_per_iteration", value: with - without,
            unit: "ns per loop iteration (an interposed wait's end and the next one's begin), best of 5",
            goal: "<= 50"
        ).printLine()
        dispatchedItems(iterations: iterations)
    }

    /// The dispatch trampolines' bracket around one item: a main-queue item and a pool thread's
    /// Swift job, each against an empty loop, on a thread of its own.
    static func dispatchedItems(iterations: Int) {
        for (name, mainQueue) in [("main_queue", Int32(1)), ("pool_job", Int32(0))] {
            let measured = Locked<Double>(0)
            let done = DispatchSemaphore(value: 0)
            Thread {
                sw_dispatch_item_end(sw_dispatch_item_begin(mainQueue))  // its slot, made once
                var best = (with: Double.infinity, without: Double.infinity)
                for _ in 0..<5 {
                    var start = sw_monotonic_ns()
                    for _ in 0..<iterations { sw_dispatch_item_end(sw_dispatch_item_begin(mainQueue)) }
                    best.with = min(best.with, Double(sw_monotonic_ns() - start) / Double(iterations))
                    start = sw_monotonic_ns()
                    for index in 0..<iterations { blackHole(index) }
                    best.without = min(best.without, Double(sw_monotonic_ns() - start) / Double(iterations))
                }
                measured.withLock { $0 = best.with - best.without }
                done.signal()
            }.start()
            done.wait()
            Result(
                name: "loop_wait.\(name)_ns_per_item", value: measured.withLock { $0 },
                unit: "ns per dispatched item (the trampoline's begin and end around it), best of 5",
                goal: "<= 50"
            ).printLine()
        }
    }

    @inline(never)
    static func blackHole(_ value: Int) { _ = value }
}
