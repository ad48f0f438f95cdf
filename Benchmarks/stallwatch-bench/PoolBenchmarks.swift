import CStallwatchShims
import Dispatch
import Foundation
import Stallwatch
import StallwatchCore

/// `stallwatch-bench pool`: what watching the Swift Concurrency pool costs each job (the global
/// enqueue hook), and whether a starvation is caught, how soon, and what its samples name.
enum PoolBenchmarks {
    /// Blocks its pool thread (what the starvation's samples must name). Not a tail call, so its
    /// frame stays on the stack in a release build.
    @inline(never) static func blockingWork(milliseconds: UInt32) -> Int32 { usleep(milliseconds * 1000) &+ 1 }

    static func run() throws {
        // 1. Per job: empty detached tasks without the hook, with it (no watchdog), alternating
        //    five times, then with a running monitor (its heartbeats share the pool); each the best.
        let jobs = 100_000
        let monitor = HeartbeatMonitor()
        monitor.watchConcurrencyPool()
        var bare = Double.infinity
        var hooked = Double.infinity
        for _ in 0..<5 {
            sw_pool_hook_set_enabled_for_benchmark(0)
            bare = min(bare, nanosPerJob(jobs))
            sw_pool_hook_set_enabled_for_benchmark(1)
            hooked = min(hooked, nanosPerJob(jobs))
        }
        try monitor.start()
        let watched = (0..<5).map { _ in nanosPerJob(jobs) }.min()!
        Result(name: "pool.job.bare", value: bare, unit: "ns/job").printLine()
        Result(
            name: "pool.job.hooked", value: hooked, unit: "ns/job", peer: "no hook", peerValue: bare,
            ratio: bare / hooked
        )
        .printLine()
        Result(
            name: "pool.job.watched", value: watched, unit: "ns/job", peer: "no hook", peerValue: bare,
            ratio: bare / watched
        ).printLine()
        monitor.stop()

        // 2. Idle: the watchdog parked for 2 s.
        let stalls = Locked<[Stall]>([])
        let starved = HeartbeatMonitor()
        starved.watchConcurrencyPool()
        starved.onStallEnded = { stall in stalls.withLock { $0.append(stall) } }
        try starved.start()
        Thread.sleep(forTimeInterval: 0.3)
        let before = starved.statistics.watchdogWakeups
        Thread.sleep(forTimeInterval: 2)
        let idle = Double(starved.statistics.watchdogWakeups - before) / 2
        Result(name: "pool.idle.watchdog_wakeups", value: idle, unit: "wakeups/s", goal: "0").printLine()

        // 3. A starvation of about 100 ms: twice as many 100 ms jobs as the pool has threads (the
        //    last ones wait 100 ms to start), ten times.
        let width = ProcessInfo.processInfo.activeProcessorCount
        for _ in 0..<10 {
            for _ in 0..<(2 * width) { Task.detached { _ = blockingWork(milliseconds: 100) } }
            Thread.sleep(forTimeInterval: 0.4)
        }
        starved.stop()
        let caught = stalls.withLock { $0 }
        let samples = caught.flatMap(\.samples)
        let named = samples.filter { $0.frames.contains { $0.symbol?.contains("blockingWork") == true } }
        if named.isEmpty, let sample = samples.first {
            FileHandle.standardError.write(
                Data("pool: a sample's frames: \(sample.frames.map { $0.symbol ?? "?" })\n".utf8))
        }
        let latency = starved.statistics.detectionLatencyNanos.sorted()
        Result(name: "pool.starvation.caught", value: Double(caught.count), unit: "of 10", goal: "10").printLine()
        Result(
            name: "pool.starvation.duration_median",
            value: Double(caught.map { ($0.end ?? $0.start) - $0.start }.sorted()[safe: caught.count / 2] ?? 0) / 1e6,
            unit: "ms"
        ).printLine()
        Result(
            name: "pool.starvation.samples_naming_blocker",
            value: 100 * Double(named.count) / Double(max(1, samples.count)),
            unit: "%", goal: ">= 90"
        ).printLine()
        Result(
            name: "pool.starvation.detection_p50", value: Double(latency[safe: latency.count / 2] ?? 0) / 1e6,
            unit: "ms"
        ).printLine()
        Result(name: "pool.starvation.detection_max", value: Double(latency.last ?? 0) / 1e6, unit: "ms").printLine()
    }

    /// Spawns `count` empty detached tasks and waits for the last: ns per job.
    private static func nanosPerJob(_ count: Int) -> Double {
        let done = DispatchSemaphore(value: 0)
        let remaining = Locked(count)
        let start = nowNanos()
        for _ in 0..<count {
            Task.detached {
                if remaining.withLock({
                    $0 -= 1
                    return $0
                }) == 0 {
                    done.signal()
                }
            }
        }
        done.wait()
        return Double(nowNanos() - start) / Double(count)
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
