import Dispatch
import Foundation
import Stallwatch
import StallwatchCore

/// `stallwatch-bench heartbeat`: what a heartbeat monitor costs an executor it does not own,
/// busy and idle, and how fast and how exactly it catches stalls there.
enum HeartbeatBenchmarks {
    /// A serial executor of the plainest kind: a thread, a queue, a condition variable.
    final class Executor: @unchecked Sendable {
        private let condition = NSCondition()
        private var queue: [@Sendable () -> Void] = []
        private(set) var tid: Int32 = 0

        init() {
            let ready = DispatchSemaphore(value: 0)
            Thread { [self] in
                let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
                tid = Int32(link.split(separator: "/").last ?? "") ?? 0
                ready.signal()
                while true {
                    condition.lock()
                    while queue.isEmpty { condition.wait() }
                    let batch = queue
                    queue.removeAll()
                    condition.unlock()
                    for task in batch { task() }
                }
            }.start()
            ready.wait()
        }

        func execute(_ task: @escaping @Sendable () -> Void) {
            condition.lock()
            queue.append(task)
            condition.signal()
            condition.unlock()
        }
    }

    static func run() throws {
        let executor = Executor()
        var configuration = HeartbeatMonitor.Configuration()
        configuration.selfSampling = true
        let monitor = HeartbeatMonitor(configuration: configuration)
        let watched = monitor.watch(label: "bench") { executor.execute($0) }
        let spinStarts = Locked<[UInt64]>([])
        let stalls = Locked<[Stall]>([])
        monitor.onStallEnded = { stall in stalls.withLock { $0.append(stall) } }
        try monitor.start()
        Thread.sleep(forTimeInterval: 0.3)
        guard let watchdog = MonitorBenchmarks.threadID(named: "stallwatchbeat") else {
            throw BenchError("no heartbeat watchdog thread")
        }

        // 1. Idle: the executor parked for 2 s.
        let idle = measure(seconds: 2, executor: executor, watched: watched, watchdog: watchdog)
        Result(name: "heartbeat.idle.executor_wakeups", value: idle.executorWakeups, unit: "wakeups/s", goal: "0")
            .printLine()
        Result(name: "heartbeat.idle.heartbeats", value: idle.heartbeats, unit: "heartbeats/s", goal: "0").printLine()
        Result(name: "heartbeat.idle.watchdog_wakeups", value: idle.watchdogWakeups, unit: "wakeups/s").printLine()
        Result(name: "heartbeat.idle.watchdog_cpu", value: idle.watchdogCPU, unit: "% of a core").printLine()

        // 2. Busy: the executor runs a self-reposting chain of tiny jobs for 2 s.
        let running = Locked(true)
        let jobs = Locked<UInt64>(0)
        @Sendable func chain() {
            jobs.withLock { $0 += 1 }
            if running.withLock({ $0 }) { executor.execute(chain) }
        }
        executor.execute(chain)
        Thread.sleep(forTimeInterval: 0.2)
        let jobsBefore = jobs.withLock { $0 }
        let busy = measure(seconds: 2, executor: executor, watched: watched, watchdog: watchdog)
        let jobRate = Double(jobs.withLock { $0 } - jobsBefore) / 2
        running.withLock { $0 = false }
        Thread.sleep(forTimeInterval: 0.1)
        Result(
            name: "heartbeat.busy.heartbeats", value: busy.heartbeats, unit: "heartbeats/s",
            goal: "<= 1 per check interval (120/s)"
        ).printLine()
        Result(
            name: "heartbeat.busy.share_of_jobs", value: busy.heartbeats / max(jobRate, 1) * 100, unit: "% of jobs run"
        ).printLine()
        Result(name: "heartbeat.busy.watchdog_wakeups", value: busy.watchdogWakeups, unit: "wakeups/s").printLine()
        Result(name: "heartbeat.busy.watchdog_cpu", value: busy.watchdogCPU, unit: "% of a core").printLine()

        // Heartbeats later than the budget while busy or idle (preemption on a loaded machine).
        let before = monitor.statistics.stalls
        Result(name: "heartbeat.stalls_before_spins", value: Double(before), unit: "stalls", goal: "0").printLine()
        stalls.withLock { $0.removeAll() }

        // 3. Stalls: 60 spins of 40 ms, 120 ms apart, each starting from the idle wait.
        let count = 60
        let budget = monitor.configuration.budget.nanoseconds
        for _ in 0..<count {
            executor.execute {
                spinStarts.withLock { $0.append(nowNanos()) }
                MonitorBenchmarks.spin(milliseconds: 40)
            }
            Thread.sleep(forTimeInterval: 0.12)
        }
        Thread.sleep(forTimeInterval: 0.1)
        let statistics = monitor.statistics
        monitor.stop()
        let found = stalls.withLock { $0 }.sorted { $0.start < $1.start }
        let starts = spinStarts.withLock { $0 }
        // Matched by order: each spin is one stall, the first sample lands inside its spin.
        var detection: [Double] = []
        var understated: [Double] = []
        for stall in found {
            guard let first = stall.samples.first?.time,
                let start = starts.last(where: { $0 <= first }), let duration = stall.duration
            else { continue }
            detection.append(Double(Int64(first) - Int64(start + budget)) / 1000)
            understated.append((40_000_000 - Double(duration.nanoseconds)) / 1e6)
        }
        Result(
            name: "heartbeat.detection_latency.p50", value: percentile(detection, 0.5), unit: "us",
            goal: "<= check interval (8.3 ms)"
        ).printLine()
        Result(name: "heartbeat.detection_latency.p99", value: percentile(detection, 0.99), unit: "us").printLine()
        Result(
            name: "heartbeat.duration_understated.p50", value: percentile(understated, 0.5), unit: "ms",
            goal: "< check interval (8.3 ms)"
        ).printLine()
        Result(name: "heartbeat.duration_understated.p99", value: percentile(understated, 0.99), unit: "ms").printLine()
        let capture = statistics.captureLatencyNanos.map { Double($0) / 1000 }
        Result(name: "heartbeat.capture.p99", value: percentile(capture, 0.99), unit: "us").printLine()
        Result(name: "heartbeat.stalls_detected", value: Double(found.count), unit: "stalls", goal: "\(count)")
            .printLine()
        Result(
            name: "heartbeat.own_samples", value: Double(statistics.selfSamples),
            unit: "samples the executor took of itself; self-sampling \(statistics.selfSampling); watchdog "
                + "\(statistics.watchdogScheduling)"
        ).printLine()
    }

    struct Cost {
        var executorWakeups: Double
        var heartbeats: Double
        var watchdogWakeups: Double
        var watchdogCPU: Double
    }

    /// Rates over `seconds`: the kernel's counts for both threads, the monitor's heartbeats.
    static func measure(
        seconds: Double, executor: Executor, watched: HeartbeatMonitor.Executor, watchdog: Int32
    ) -> Cost {
        let executorBefore = LoopBenchmarks.voluntarySwitches(executor.tid)
        let watchdogBefore = LoopBenchmarks.voluntarySwitches(watchdog)
        let cpuBefore = cpuNanos(watchdog)
        let heartbeatsBefore = watched.heartbeatsRun
        Thread.sleep(forTimeInterval: seconds)
        return Cost(
            executorWakeups: Double(LoopBenchmarks.voluntarySwitches(executor.tid) - executorBefore) / seconds,
            heartbeats: Double(watched.heartbeatsRun - heartbeatsBefore) / seconds,
            watchdogWakeups: Double(LoopBenchmarks.voluntarySwitches(watchdog) - watchdogBefore) / seconds,
            watchdogCPU: Double(cpuNanos(watchdog) - cpuBefore) / (seconds * 1e9) * 100)
    }

    /// A thread's CPU time (ns), from schedstat.
    static func cpuNanos(_ tid: Int32) -> UInt64 {
        let text = (try? String(contentsOfFile: "/proc/self/task/\(tid)/schedstat", encoding: .utf8)) ?? ""
        return UInt64(text.split(separator: " ").first ?? "") ?? 0
    }
}
