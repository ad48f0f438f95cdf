import Dispatch
import Foundation
import Stallwatch

/// `stallwatch-bench monitor`: what watching costs and how fast stalls are caught.
enum MonitorBenchmarks {
    static func run() throws {
        let loop = MainLoop.main

        // 1. Added cost per callout: the chain with and without a monitor, alternating.
        var off: [Double] = []
        var on: [Double] = []
        for _ in 0..<5 {
            off.append(LoopBenchmarks.chainNanosPerTask(loop, tasks: LoopBenchmarks.chainTasks))
            let monitor = StallMonitor(loop: loop)
            try monitor.start()
            on.append(LoopBenchmarks.chainNanosPerTask(loop, tasks: LoopBenchmarks.chainTasks))
            monitor.stop()
        }
        let added = median(on) - median(off)
        Result(
            name: "monitor.callout_overhead", value: added, unit: "ns/callout", peer: "chain without monitor",
            peerValue: median(off), ratio: median(on) / median(off), goal: "<= 15 ns"
        ).printLine()

        // 2. Detection latency and capture cost over real stalls (25 ms spins, 16.7 ms budget).
        let monitor = StallMonitor(loop: loop)
        let ended = Box(0)
        monitor.onStallEnded = { _ in ended.value += 1 }
        try monitor.start()
        let stalls = 150
        var fired = 0
        loop.schedule(after: .milliseconds(10), repeating: .milliseconds(40)) { timer in
            spin(milliseconds: 25)
            fired += 1
            if fired == stalls {
                timer.cancel()
                loop.schedule(after: .milliseconds(50)) { _ in loop.stop() }
            }
        }
        loop.run()
        let statistics = monitor.statistics
        monitor.stop()
        let detection = statistics.detectionLatencyNanos.map { Double($0) / 1000 }
        let capture = statistics.captureLatencyNanos.map { Double($0) / 1000 }
        Result(name: "monitor.detection_latency.p50", value: percentile(detection, 0.5), unit: "us", goal: "<= 200 us")
            .printLine()
        Result(
            name: "monitor.detection_latency.p99", value: percentile(detection, 0.99), unit: "us", goal: "<= 1000 us"
        )
        .printLine()
        Result(name: "monitor.capture.p50", value: percentile(capture, 0.5), unit: "us", goal: "<= 30 us").printLine()
        Result(name: "monitor.capture.p99", value: percentile(capture, 0.99), unit: "us", goal: "<= 150 us").printLine()
        Result(name: "monitor.stalls_detected", value: Double(statistics.stalls), unit: "stalls", goal: "\(stalls)")
            .printLine()

        // 3. Watchdog wake-ups while the loop idles (kernel's count for the watchdog thread).
        Result(name: "monitor.idle_wakeups", value: try idleWatchdogWakeups(seconds: 2), unit: "wakeups/s", goal: "0")
            .printLine()
    }

    @inline(never) static func spin(milliseconds: UInt64) {
        let end = nowNanos() + milliseconds * 1_000_000
        var x: UInt64 = 0
        while nowNanos() < end { x = x &* 31 &+ 7 }
        if x == 42 { print("") }
    }

    static func idleWatchdogWakeups(seconds: Double) throws -> Double {
        let ready = DispatchSemaphore(value: 0)
        let box = Box<MainLoop?>(nil)
        Thread {
            let loop = MainLoop()
            box.value = loop
            ready.signal()
            loop.run()
        }.start()
        ready.wait()
        let loop = box.value!
        let monitor = StallMonitor(loop: loop)
        try monitor.start()
        Thread.sleep(forTimeInterval: 0.3)
        guard let watchdog = threadID(named: "stallwatchdog") else { throw BenchError("no watchdog thread") }
        let before = LoopBenchmarks.voluntarySwitches(watchdog)
        Thread.sleep(forTimeInterval: seconds)
        let after = LoopBenchmarks.voluntarySwitches(watchdog)
        monitor.stop()
        loop.stop()
        return Double(after - before) / seconds
    }

    /// The tid of the thread whose comm is `name` (Linux truncates names to 15 bytes).
    static func threadID(named name: String) -> Int32? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            if comm.trimmingCharacters(in: .whitespacesAndNewlines) == name { return Int32(task) }
        }
        return nil
    }
}
