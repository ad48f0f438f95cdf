import CStallwatchShims
import Glibc
import StallwatchCore

extension HeartbeatMonitor {
    /// The label of the Swift Concurrency pool's stalls (`watchConcurrencyPool`'s default).
    public static let poolLabel = "swift-concurrency-pool"

    /// Watches Swift Concurrency's global concurrent executor, the cooperative pool (as many
    /// threads as cores): a heartbeat is a detached task, and one that waits longer than the
    /// budget to start is a stall "pool starved", sampled on every pool thread (what blocks
    /// them) until it runs. The Swift runtime's global enqueue hook wakes the watchdog when the
    /// pool gets a job, so a process whose pool is idle is not woken. Its stalls' callout label
    /// is `label`. See docs/watchdog.md, "The Swift Concurrency pool". Before or after `start()`;
    /// any thread; once per monitor.
    @discardableResult
    public func watchConcurrencyPool(label: String = HeartbeatMonitor.poolLabel) -> Executor {
        let hooked = sw_pool_hook_install() == 0
        core.record { $0.poolEnqueueHook = hooked }
        let executor = Executor(
            label: label, schedule: { beat in Task.detached { beat() } }, pool: true,
            preparationDelayForTesting: configuration.preparationDelayForTesting)
        let enqueued = sw_pool_enqueued()
        executor.pool?.withLock {
            $0.hooked = hooked
            $0.enqueuedWhenWatched = enqueued
        }
        return add(executor)
    }
}

/// What a pool executor learns from its heartbeats: the threads they ran on (each prepared for
/// sampling by the first one there) and the pool threads' name in /proc.
struct PoolThreads {
    /// libdispatch names the default-QoS pool threads `com.apple.root.default-qos`; /proc keeps
    /// the last 15 bytes. Used until a heartbeat has run and read its thread's own name.
    static let defaultName = "oot.default-qos"

    var prepared: Set<Int32> = []
    var name = PoolThreads.defaultName
    /// Whether the enqueue hook counts the pool's jobs (else the pool is never quiet).
    var hooked = false
    /// The jobs the hook had counted when the pool was watched: every later one is news to the
    /// watchdog, even one enqueued before its thread first looked.
    var enqueuedWhenWatched: UInt64 = 0

    /// The calling thread's name, as /proc shows it.
    static func currentName() -> String {
        var name = [CChar](repeating: 0, count: 16)
        name.withUnsafeMutableBufferPointer { sw_thread_name($0.baseAddress!) }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The process's threads called `name` (/proc/self/task/*/comm), in tid order.
    static func threads(named name: String) -> [Int32] {
        guard let directory = opendir("/proc/self/task") else { return [] }
        defer { closedir(directory) }
        var tids: [Int32] = []
        while let entry = readdir(directory) {
            let tid = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Int32(String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self))
            }
            guard let tid else { continue }
            if ProcFile.threadName(tid) == name { tids.append(tid) }
        }
        return tids.sorted()
    }
}

extension HeartbeatMonitor {
    /// What the watchdog keeps for the pool: the enqueue count it last saw, and a sampler per
    /// pool thread (kept across stalls; remade once a heartbeat has prepared its thread).
    struct PoolWatch {
        let hooked: Bool
        /// Jobs counted when the watchdog sent its last heartbeat; at first, those counted when
        /// the pool was watched (a program that never runs a task gets no heartbeat, and no pool
        /// threads; a burst of jobs right after `start()`, before the watchdog's first look, one).
        var seen: UInt64
        var samplers: [Int32: (sampler: ThreadSampler, prepared: Bool)] = [:]
        /// The threads sampled in the stall in progress.
        var sampled: [ThreadSampler] = []
        /// Nothing in flight and no job since the last look: the watchdog may park.
        var quiet = false
        /// Each pool thread's idle wait, learned when the pool went quiet: a thread parked there
        /// during a starvation (libdispatch may keep more threads than the pool is wide) runs no
        /// job, and is not sampled.
        var idle: [Int32: IdleProbe] = [:]
        /// Whether the idle waits were learned since the last heartbeat was sent.
        var learned = false
        /// The futex words two or more pool threads were parked on when the pool went quiet.
        /// libdispatch's idle workers all wait on their root queue's one semaphore, so a thread
        /// waiting on one of these is parked idle even where its own wait was never learned: a
        /// thread that was running when the pool went quiet, or parked there by another path
        /// (sampled, its semaphore wait would outweigh the jobs that block the pool). Two
        /// threads, because one job blocked on its own semaphore while the pool is quiet is one
        /// thread.
        var idleWords: Set<UInt64> = []

        /// Whether pool thread `tid` is parked in an idle wait now (one pread).
        func isParked(_ tid: Int32) -> Bool {
            guard let probe = idle[tid] else { return false }
            switch probe.state() {
            case .idle: return true
            case .unknownWait(let wait): return wait.call == IdleProbe.futex && idleWords.contains(wait.argument)
            case .busy, .gone: return false
            }
        }
    }

    /// One look at the pool. The heartbeat in flight is the detector's item
    /// (`heartbeatLook`): past the budget, a stall, every pool thread not parked idle sampled
    /// each interval until it runs. None in flight: a heartbeat if jobs were enqueued since the
    /// last one was sent (or the hook is missing), else the pool is quiet.
    func stepPool(_ watch: inout Watch, now: UInt64, budget: UInt64, suspended: Bool, nextID: inout UInt64) {
        let executor = watch.executor
        var pool =
            watch.pool
            ?? PoolWatch(
                hooked: executor.pool?.withLock { $0.hooked } ?? false,
                seen: executor.pool?.withLock { $0.enqueuedWhenWatched } ?? 0)
        defer { watch.pool = pool }
        pool.quiet = false
        if suspended { watch.stall?.flags.insert(.suspended) }
        var (look, _) = heartbeatLook(&watch, budget: budget)
        var threads: [Int32] = []
        if look.sequence & 1 == 1, watch.detector.stalled == nil, now >= look.start.saturatingAdding(budget) {
            threads = poolThreads(executor)
            if threads.isEmpty { look.sequence &-= 1 }  // no pool thread to sample yet
        }
        for action in watch.detector.look(look, now: now) {
            switch action {
            case .began(_, let start):
                pool.sampled = samplers(for: threads, pool: &pool, executor: executor)
                for tid in threads where pool.idle[tid] == nil { pool.idle[tid] = IdleProbe(tid: tid) }
                watch.stall = newStall(of: executor, start: start, suspended: suspended, nextID: &nextID)
                watch.progressed = 0
                watch.scopes = ExpectedScopeTally()
                for sampler in pool.sampled { sampler.beginStall() }
            case .sample:
                // One look: the threads not parked in an idle wait, their samples numbered with
                // the look that follows the stall's last.
                let looked = pool.sampled.filter { !pool.isParked($0.tid) }
                let number = watch.stall?.samples.last?.look.map { $0 + 1 } ?? 0
                for sampler in looked { sampler.look = number }
                sampleStall(&watch, looked, now: now, budget: budget)
            case .ended(_, _, let end, _):
                guard var stall = watch.stall else { break }
                for sampler in pool.sampled { sampler.endStall() }
                pool.sampled = []
                stall.end = max(end, stall.start)
                watch.stall = nil
                core.deliverEnded(stall)
            case .missed, .abandoned:
                break  // a starvation is seen while it lasts, by the watchdog's looks only
            }
        }
        watch.nextSample = watch.detector.wakeAt ?? now
        guard watch.stall == nil, executor.pending.load(ordering: .acquiring) == 0 else { return }
        // No heartbeat in flight. Jobs since the last one was sent: send one now, due now.
        guard !pool.hooked || sw_pool_enqueued() != pool.seen else {
            pool.quiet = true
            if !pool.learned { learnIdleWaits(&pool, executor: executor) }
            return
        }
        // Stallwatch's own work on a pool thread: no heartbeat waits behind it.
        guard executor.isFreeOfOwnWork else { return }
        pool.learned = false
        send(&watch, now: now)
        // The heartbeat's own enqueue is counted: the count now includes it.
        pool.seen = sw_pool_enqueued()
    }

    /// The pool went quiet (its last heartbeat ran within the budget, no job since): each pool
    /// thread in a wait now is parked in its idle wait. Once per busy period, before parking.
    /// Each thread's sampler is made now too, so that a starvation's first samples do not wait
    /// for them (made at detection, the first sample came 53 ms past the deadline once in a CI
    /// run under ASan; made here, 1–13 ms in five ASan runs).
    private func learnIdleWaits(_ pool: inout PoolWatch, executor: Executor) {
        pool.learned = true
        let threads = poolThreads(executor)
        pool.idle = pool.idle.filter { threads.contains($0.key) }
        var parkedOn: [UInt64: Int] = [:]
        for tid in threads {
            let probe = pool.idle[tid] ?? IdleProbe(tid: tid)
            pool.idle[tid] = probe
            guard case .unknownWait(let signature) = probe.state() else { continue }
            probe.learn(signature)
            if signature.call == IdleProbe.futex { parkedOn[signature.argument, default: 0] += 1 }
        }
        for (word, threads) in parkedOn where threads >= 2 && pool.idleWords.count < 16 {
            pool.idleWords.insert(word)
        }
        _ = samplers(for: threads, pool: &pool, executor: executor)
    }

    /// The pool's threads: those that ran a Swift job where the preload library times jobs, else
    /// those with the pool threads' name.
    private func poolThreads(_ executor: Executor) -> [Int32] {
        jobThreads() ?? PoolThreads.threads(named: executor.pool?.withLock { $0.name } ?? PoolThreads.defaultName)
    }

    /// A sampler for each of `threads`. A thread no heartbeat has run on blocks the sampling
    /// signal (libdispatch's threads do): it is sampled without it (stack scan, perf).
    private func samplers(for threads: [Int32], pool: inout PoolWatch, executor: Executor) -> [ThreadSampler] {
        let prepared = executor.pool?.withLock { $0.prepared } ?? []
        pool.samplers = pool.samplers.filter { threads.contains($0.key) }
        return threads.map { tid in
            let ready = prepared.contains(tid)
            if let (sampler, wasReady) = pool.samplers[tid], wasReady == ready { return sampler }
            let sampler = ThreadSampler(
                tid: tid, configuration: configuration.common, canCapture: samplerError == nil && ready,
                annotations: nil, usePerf: configuration.perfSampling)
            pool.samplers[tid] = (sampler, ready)
            return sampler
        }
    }
}
