// A pool has a serial queue per active core (≤ 16); each task goes to the least-loaded queue (lowest index on a tie), queues run FIFO, and a task cancelled before it starts never runs.
import CStallwatchShims
import Dispatch
import Foundation
import Glibc
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch
@testable import StallwatchRemedies

/// Holds tasks until `open()`; waiting after that returns at once.
private final class Gate: Sendable {
    private let group = DispatchGroup()
    init() { group.enter() }
    func open() { group.leave() }
    func wait() { _ = group.wait(timeout: .now() + .seconds(10)) }
}

/// The CPU indices set in `mask`, lowest first.
private func cpus(in mask: cpu_set_t) -> [Int] {
    withUnsafeBytes(of: mask) { bytes in
        bytes.indices.flatMap { byte in (0..<8).filter { bytes[byte] & (1 << $0) != 0 }.map { byte * 8 + $0 } }
    }
}

@Suite struct RemedyQueuePoolTests {
    @Test func defaultWidthIsTheActiveCoreCountCappedAtSixteen() {
        let pool = QueuePool(label: "test.default")
        #expect(pool.width == min(QueuePool.activeCoreCount(), 16))
        #expect(pool.loads == [Int](repeating: 0, count: pool.width))
    }

    @Test func activeCoreCountMatchesTheAffinityMaskAndNproc() throws {
        var mask = cpu_set_t()
        try #require(sw_get_thread_affinity(&mask) == 0)
        let online = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        #expect(QueuePool.activeCoreCount() == min(cpus(in: mask).count, online))

        // nproc counts the affinity mask too; OMP_NUM_THREADS would change its answer.
        let nproc = try ChildRun("/usr/bin/nproc", [], environment: [:])
        #expect(nproc.exitCode == 0, "\(nproc)")
        #expect(QueuePool.activeCoreCount() == Int(nproc.output.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    @Test func activeCoreCountFollowsTheCallingThreadsAffinity() throws {
        var processMask = cpu_set_t()
        try #require(sw_get_thread_affinity(&processMask) == 0)
        let allowed = cpus(in: processMask)
        // On a fresh thread (a pooled one would keep the mask), restricted to its first one
        // and then first two allowed CPUs.
        for take in 1...min(allowed.count, 2) {
            let counted = Locked<Int?>(nil)
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                var mask = cpu_set_t()
                withUnsafeMutableBytes(of: &mask) { bytes in
                    for cpu in allowed.prefix(take) { bytes[cpu / 8] |= UInt8(1 << (cpu % 8)) }
                }
                if sw_set_thread_affinity(&mask) == 0 {
                    let count = QueuePool.activeCoreCount()
                    counted.withLock { $0 = count }
                }
                done.signal()
            }
            thread.start()
            #expect(done.wait(timeout: .now() + .seconds(10)) == .success)
            #expect(counted.withLock { $0 } == take)
        }
    }

    @Test func explicitWidthIsUsedAsGiven() {
        #expect(QueuePool(label: "test.three", width: 3).width == 3)
        #expect(QueuePool(label: "test.three", width: 3).loads == [0, 0, 0])
        #expect(QueuePool(label: "test.wide", width: 40).width == 40)
    }

    @Test func badWidthIsAPreconditionFailure() async {
        let child = ExitTestErrors()
        let zero = await #expect(processExitsWith: .failure) { [path = child.path as String] in
            sendStandardError(to: path)
            _ = QueuePool(width: 0)
        }
        child.check(zero)
        let negative = await #expect(processExitsWith: .failure) { [path = child.path as String] in
            sendStandardError(to: path)
            _ = QueuePool(width: -1)
        }
        child.check(negative)
    }

    @Test func tasksGoToDistinctQueuesWhenAllAreBusy() {
        let pool = QueuePool(label: "test.distinct", width: 4)
        let gate = Gate()
        let started = DispatchSemaphore(value: 0)
        let tasks = (0..<4).map { _ in
            pool.submit {
                started.signal()
                gate.wait()
            }
        }
        #expect(tasks.map(\.queueIndex) == [0, 1, 2, 3])
        #expect(pool.loads == [1, 1, 1, 1])
        // All four are running at once: none waits behind another on a serial queue.
        for _ in 0..<4 { #expect(started.wait(timeout: .now() + .seconds(10)) == .success) }
        // All queues equally loaded: the tie goes to the lowest index.
        #expect(pool.submit {}.queueIndex == 0)
        #expect(pool.submit {}.queueIndex == 1)
        #expect(pool.loads == [2, 2, 1, 1])
        gate.open()
        #expect(eventually { pool.loads == [0, 0, 0, 0] })
    }

    @Test func submitPicksTheLeastLoadedQueueNotTheNextOne() {
        let pool = QueuePool(label: "test.least", width: 3)
        let gate = Gate()
        let tasks = (0..<6).map { _ in pool.submit { gate.wait() } }
        #expect(tasks.map(\.queueIndex) == [0, 1, 2, 0, 1, 2])
        #expect(tasks[4].cancel())
        #expect(pool.loads == [2, 1, 2])
        // Round-robin would pick queue 0 next; the least-loaded rule picks queue 1.
        #expect(pool.submit { gate.wait() }.queueIndex == 1)
        #expect(pool.submit { gate.wait() }.queueIndex == 0)
        #expect(pool.loads == [3, 2, 2])
        gate.open()
        #expect(eventually { pool.loads == [0, 0, 0] })
    }

    @Test func equalTasksSpreadEvenlyAndRunInParallel() {
        let width = 4
        let perQueue = 4
        let cost = Duration.milliseconds(20)
        let pool = QueuePool(label: "test.balance", width: width)
        let gate = Gate()
        let done = DispatchGroup()
        let finished = Locked<[Int: ContinuousClock.Instant]>([:])
        var tasks: [PoolTask] = []
        // Held at the gate so that no task ends while the rest are still being placed.
        for _ in 0..<(width * perQueue) {
            done.enter()
            let task = pool.submit {
                gate.wait()
                usleep(20_000)
                done.leave()
            }
            tasks.append(task)
        }
        let placed = Dictionary(grouping: tasks, by: \.queueIndex).mapValues(\.count)
        #expect(placed == [0: perQueue, 1: perQueue, 2: perQueue, 3: perQueue])
        // The last task of each queue stamps that queue's end.
        for queue in 0..<width {
            let stamp = pool.submit { finished.withLock { $0[queue] = .now } }
            #expect(stamp.queueIndex == queue)
        }
        let start = ContinuousClock.now
        gate.open()
        #expect(done.wait(timeout: .now() + .seconds(20)) == .success)
        #expect(eventually { finished.withLock { $0.count } == width })
        let ends = finished.withLock { $0 }
        let serial = cost * (width * perQueue)
        let wall = ends.values.max()! - start
        // Ideal: perQueue × cost = 80 ms against 320 ms serial; margins for a loaded 2-core VM.
        #expect(wall < serial * 0.75, "wall \(wall) against serial \(serial)")
        #expect(ends.values.max()! - ends.values.min()! < serial / 2)
    }

    @Test func loadDropsWhenATaskFinishes() {
        let pool = QueuePool(label: "test.finish", width: 2)
        let gate = Gate()
        let task = pool.submit { gate.wait() }
        #expect(pool.loads == [1, 0])
        gate.open()
        #expect(eventually { pool.loads == [0, 0] })
        #expect(!task.cancel())
        #expect(!task.isCancelled)
    }

    @Test func cancelBeforeStartDropsTheLoadAndTheWorkNeverRuns() {
        let pool = QueuePool(label: "test.cancel", width: 1)
        let gate = Gate()
        let started = DispatchSemaphore(value: 0)
        let running = pool.submit {
            started.signal()
            gate.wait()
        }
        #expect(started.wait(timeout: .now() + .seconds(10)) == .success)
        let ran = Locked(false)
        let victim = pool.submit { ran.withLock { $0 = true } }
        #expect(pool.loads == [2])
        #expect(victim.cancel())
        #expect(victim.isCancelled)
        #expect(pool.loads == [1])
        #expect(!victim.cancel())
        // Started already: cancel is too late and the task runs to its end.
        #expect(!running.cancel())
        #expect(!running.isCancelled)
        let after = DispatchSemaphore(value: 0)
        pool.submit { after.signal() }
        gate.open()
        // The queue is serial: once the later task ran, it has passed the cancelled one.
        #expect(after.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(ran.withLock { $0 } == false)
        #expect(eventually { pool.loads == [0] })
    }

    @Test func tasksOnOneQueueRunInSubmissionOrder() {
        let pool = QueuePool(label: "test.fifo", width: 3)
        let gate = Gate()
        let log = Locked<[Int]>([])
        let done = DispatchGroup()
        let count = 600
        var queueOf: [Int] = []
        for sequence in 0..<count {
            done.enter()
            let task = pool.submit {
                gate.wait()
                log.withLock { $0.append(sequence) }
                done.leave()
            }
            queueOf.append(task.queueIndex)
        }
        gate.open()
        #expect(done.wait(timeout: .now() + .seconds(20)) == .success)
        let ran = log.withLock { $0 }
        #expect(ran.sorted() == Array(0..<count))
        for queue in 0..<pool.width {
            let order = ran.filter { queueOf[$0] == queue }
            #expect(order.count == count / pool.width)
            #expect(order == order.sorted(), "queue \(queue) ran out of order")
        }
    }

    @Test func sharedReturnsOnePoolPerQoS() {
        let utility = QueuePool.shared(qos: .utility)
        #expect(utility === QueuePool.shared(qos: .utility))
        #expect(utility !== QueuePool.shared(qos: .background))
        #expect(utility.width == min(QueuePool.activeCoreCount(), 16))
        // Racing first uses still create one pool.
        let seen = Locked<Set<ObjectIdentifier>>([])
        DispatchQueue.concurrentPerform(iterations: 32) { _ in
            let pool = QueuePool.shared(qos: .userInteractive)
            seen.withLock { _ = $0.insert(ObjectIdentifier(pool)) }
        }
        #expect(seen.withLock { $0.count } == 1)
    }
}
