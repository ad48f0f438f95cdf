import CStallwatchShims
import Dispatch
import Glibc
import Stallwatch
import StallwatchCore

/// Serial dispatch queues, as many as the active cores, for one QoS; each submitted task goes
/// to the queue with the fewest tasks queued or running. Work that would stall the loop (decoding,
/// parsing, disk reads) moves here without opening one thread per task: a serial queue is at most
/// one thread, so a burst of submissions never runs more threads than the pool is wide.
///
/// Any thread may call every member. Tasks run on the pool's queues, one at a time per queue, in
/// submission order per queue. A task must not wait for another task of the same pool: it may be
/// queued behind it.
public final class QueuePool: Sendable {
    /// The widest default pool. Past this, more serial queues only add threads competing for the
    /// same cores and for libdispatch's root queue, not throughput.
    static let maximumDefaultWidth = 16

    /// The number of serial queues. Any thread.
    public let width: Int

    private let queues: [DispatchQueue]

    /// Tasks queued or running, per queue. One lock for the whole array, not an atomic per
    /// queue, because picking the least-loaded queue and counting the task on it must be one
    /// step: with separate atomics two submitters can both see the same minimum and pile onto
    /// one queue. The critical section is a scan of at most a few dozen integers.
    private let loadCounts: Locked<[Int]>

    private static let sharedPools = Locked<[DispatchQoS.QoSClass: QueuePool]>([:])

    /// The number of CPUs this thread may run on: its `sched_getaffinity` mask, at most the
    /// online CPUs (`sysconf(_SC_NPROCESSORS_ONLN)`), at least 1. Unlike the online count alone,
    /// this honours `taskset` and container cpusets (not CFS quotas). Any thread; it reads the
    /// calling thread's mask, so call it from a thread that has the process's affinity.
    public static func activeCoreCount() -> Int {
        let online = max(sysconf(Int32(_SC_NPROCESSORS_ONLN)), 1)
        var mask = cpu_set_t()
        // Fails only if the kernel's mask is wider than cpu_set_t (over 1024 CPUs): then the
        // online count is the best estimate there is.
        guard sw_get_thread_affinity(&mask) == 0 else { return online }
        // glibc's CPU_COUNT is a macro, so Swift cannot import it: count the mask's bits here.
        let allowed = withUnsafeBytes(of: &mask) { bytes in
            bytes.reduce(0) { $0 + $1.nonzeroBitCount }
        }
        return max(min(allowed, online), 1)
    }

    /// The process-wide pool for `qos`, created on first use with the default width and the
    /// label `stallwatch.pool.<qos>`. Every call with the same `qos` returns the same pool.
    /// Any thread.
    public static func shared(qos: DispatchQoS.QoSClass) -> QueuePool {
        sharedPools.withLock { pools in
            if let pool = pools[qos] { return pool }
            let pool = QueuePool(label: "stallwatch.pool.\(qos)", qos: qos)
            pools[qos] = pool
            return pool
        }
    }

    /// Creates `width` serial queues labelled `<label>.0`, `<label>.1`, …, all at `qos`.
    /// `width` defaults to `min(activeCoreCount(), 16)`; an explicit width is used as given and
    /// must be positive. Any thread.
    public init(label: String = "stallwatch.pool", qos: DispatchQoS.QoSClass = .userInitiated, width: Int? = nil) {
        let width = width ?? min(Self.activeCoreCount(), Self.maximumDefaultWidth)
        require(width > 0, "QueuePool width must be positive, got \(width)")
        self.width = width
        let serviceClass = DispatchQoS(qosClass: qos, relativePriority: 0)
        queues = (0..<width).map { DispatchQueue(label: "\(label).\($0)", qos: serviceClass) }
        loadCounts = Locked([Int](repeating: 0, count: width))
    }

    /// Queues `work` on the least-loaded queue; a tie goes to the lowest index, so an idle pool
    /// keeps reusing queue 0 (and its warm thread) and placement is predictable. A task that
    /// calls this is still counted on its own queue, so its follow-up may go behind another
    /// queue's running task. Any thread; `work` runs on that queue after the tasks queued there
    /// before it.
    @discardableResult
    public func submit(_ work: @escaping @Sendable () -> Void) -> PoolTask {
        let index = loadCounts.withLock { loads in
            var least = 0
            for candidate in loads.indices where loads[candidate] < loads[least] { least = candidate }
            loads[least] += 1
            return least
        }
        let task = PoolTask(pool: self, queueIndex: index)
        queues[index].async {
            // A cancelled task's load was already dropped by `cancel()`; its block is a no-op.
            guard task.start() else { return }
            work()
            self.taskEnded(onQueue: index)
        }
        return task
    }

    /// Tasks queued or running on each queue, indexed like the queues: a snapshot, possibly
    /// stale as soon as it returns. Any thread.
    public var loads: [Int] { loadCounts.withLock { $0 } }

    fileprivate func taskEnded(onQueue index: Int) {
        loadCounts.withLock { $0[index] -= 1 }
    }
}

/// A task submitted to a `QueuePool`, for cancelling it before it starts. Any thread.
public final class PoolTask: Sendable {
    private let gate = StartGate()
    private let pool: QueuePool

    /// The index of the queue the task was placed on (for tests and debugging).
    let queueIndex: Int

    fileprivate init(pool: QueuePool, queueIndex: Int) {
        self.pool = pool
        self.queueIndex = queueIndex
    }

    /// Cancels the task if it has not started: then its work never runs and its queue's load
    /// drops at once, and this returns true. Returns false if the task had already started (it
    /// runs to the end) or was already cancelled. Any thread.
    @discardableResult
    public func cancel() -> Bool {
        let cancelled = gate.cancel()
        if cancelled { pool.taskEnded(onQueue: queueIndex) }
        return cancelled
    }

    /// Whether `cancel()` stopped the task before it started. Any thread.
    public var isCancelled: Bool { gate.isCancelled }

    fileprivate func start() -> Bool { gate.start() }
}
