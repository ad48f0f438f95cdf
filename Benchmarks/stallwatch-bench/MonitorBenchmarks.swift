import Dispatch
import Foundation
import Stallwatch
import StallwatchCore

/// `stallwatch-bench monitor`: what watching costs and how fast stalls are caught.
enum MonitorBenchmarks {
    static func run() throws {
        let loop = MainLoop.main

        // 1. Added cost per callout: the chain with and without a monitor, alternating; and with
        //    a monitor whose loop thread does not sample itself (its ticks' share of the cost).
        var off: [Double] = []
        var on: [Double] = []
        var onWithoutTicks: [Double] = []
        for _ in 0..<5 {
            off.append(LoopBenchmarks.chainNanosPerTask(loop, tasks: LoopBenchmarks.chainTasks))
            for selfSampling in [true, false] {
                var configuration = StallMonitor.Configuration()
                configuration.selfSampling = selfSampling
                let monitor = StallMonitor(loop: loop, configuration: configuration)
                try monitor.start()
                let nanos = LoopBenchmarks.chainNanosPerTask(loop, tasks: LoopBenchmarks.chainTasks)
                if selfSampling { on.append(nanos) } else { onWithoutTicks.append(nanos) }
                monitor.stop()
            }
        }
        let added = median(on) - median(off)
        Result(
            name: "monitor.callout_overhead", value: added, unit: "ns/callout", peer: "chain without monitor",
            peerValue: median(off), ratio: median(on) / median(off), goal: "<= 15 ns"
        ).printLine()
        Result(
            name: "monitor.self_sampling.callout_cost", value: median(on) - median(onWithoutTicks), unit: "ns/callout",
            peer: "monitor without self-sampling", peerValue: median(onWithoutTicks),
            ratio: median(on) / median(onWithoutTicks), goal: "unchanged (within noise)"
        ).printLine()

        // 2. Detection latency and capture cost over real stalls (25 ms spins, 16.7 ms budget),
        //    with the perf path (the default) and without it, alternating.
        var withPerf = Collected()
        var withoutPerf = Collected()
        for round in 0..<4 {
            for perf in [true, false] {
                let (statistics, _) = try stalls(perf: perf, count: 40) { spin(milliseconds: 25) }
                if perf { withPerf.add(statistics) } else { withoutPerf.add(statistics) }
                if round == 0 && perf {
                    Result(
                        name: "monitor.perf_path", value: statistics.perfSampling == .kernelAndUser ? 2 : 0,
                        unit: statistics.perfSampling.description, goal: "kernel+user as root"
                    ).printLine()
                }
            }
        }
        func microseconds(_ values: [UInt64]) -> [Double] { values.map { Double($0) / 1000 } }
        let detection = microseconds(withPerf.detectionLatencyNanos)
        let detectionOff = microseconds(withoutPerf.detectionLatencyNanos)
        let capture = microseconds(withPerf.captureLatencyNanos)
        let captureOff = microseconds(withoutPerf.captureLatencyNanos)
        Result.percentiles(
            "monitor.detection_latency", detection, peer: "perf path off", detectionOff,
            goals: ("<= 200 us", "<= 1000 us"))
        Result.percentiles(
            "monitor.capture", capture, peer: "perf path off", captureOff, goals: ("<= 30 us", "<= 150 us"))
        Result(
            name: "monitor.stalls_detected", value: Double(withPerf.stalls), unit: "stalls", peer: "perf path off",
            peerValue: Double(withoutPerf.stalls), goal: "160"
        ).printLine()

        // 2b. Stalls inside the kernel (one read() of a cached 512 MB file: the kernel copies it;
        //     only a fatal signal ends it early, so the sampling signal waits): the signal cannot be
        //     taken there. Share of samples with a stack, by path; what the perf path costs
        //     the watchdog (ring read + unwind per sample) and the stalled thread (its stall time).
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 512 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 1)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-bench-\(getpid())").path
        let file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        guard file >= 0 else { throw BenchError("cannot create \(path)") }
        defer {
            close(file)
            unlink(path)
        }
        guard write(file, buffer.baseAddress, buffer.count) == buffer.count else { throw BenchError("short write") }
        var kernelStats: [Bool: Collected] = [true: Collected(), false: Collected()]
        var kernelStalls: [Bool: [Stall]] = [true: [], false: []]
        for _ in 0..<3 {
            for perf in [true, false] {
                let (statistics, ended) = try stalls(perf: perf, count: 8) {
                    readKernelBound(file, buffer)
                }
                kernelStats[perf]!.add(statistics)
                kernelStalls[perf]! += ended
            }
        }
        func share(_ stalls: [Stall], _ keep: (Sample) -> Bool) -> Double {
            let samples = stalls.flatMap(\.samples)
            return samples.isEmpty ? 0 : Double(samples.filter(keep).count) / Double(samples.count)
        }
        let perfOn = kernelStalls[true]!
        let perfOff = kernelStalls[false]!
        Result(
            name: "monitor.kernel_stall.samples_with_stack", value: share(perfOn) { !$0.frames.isEmpty }, unit: "share",
            peer: "perf path off", peerValue: share(perfOff) { !$0.frames.isEmpty }, goal: "1.0"
        ).printLine()
        Result(
            name: "monitor.kernel_stall.samples_from_perf", value: share(perfOn) { $0.source == .perf }, unit: "share",
            peer: "perf path off", peerValue: share(perfOff) { $0.source == .perf }
        ).printLine()
        Result(
            name: "monitor.kernel_stall.samples_stale", value: share(perfOn) { $0.source == .stale }, unit: "share",
            peer: "perf path off", peerValue: share(perfOff) { $0.source == .stale }
        ).printLine()
        let unwind = microseconds(kernelStats[true]!.perfUnwindNanos)
        Result(name: "monitor.perf.unwind.p50", value: percentile(unwind, 0.5), unit: "us").printLine()
        Result(name: "monitor.perf.unwind.p99", value: percentile(unwind, 0.99), unit: "us").printLine()
        func meanMillis(_ stalls: [Stall]) -> Double {
            let millis = stalls.map { Double(($0.end ?? $0.start) - $0.start) / 1e6 }
            return stalls.isEmpty ? 0 : millis.reduce(0, +) / Double(stalls.count)
        }
        Result(
            name: "monitor.kernel_stall.duration", value: meanMillis(perfOn), unit: "ms", peer: "perf path off",
            peerValue: meanMillis(perfOff), ratio: meanMillis(perfOff) / meanMillis(perfOn)
        ).printLine()

        // 3. Watchdog wake-ups while the loop idles (kernel's count for the watchdog thread).
        Result(name: "monitor.idle_wakeups", value: try idleWatchdogWakeups(seconds: 2), unit: "wakeups/s", goal: "0")
            .printLine()

        // 4. On time under load, privileged and not, in this one run.
        try UnderLoad.runBoth()
    }

    /// Runs `count` stalls (`work` every 80 ms on the main loop) under a monitor with or without
    /// the perf path; returns its statistics and the stalls it delivered.
    static func stalls(perf: Bool, selfSampling: Bool = true, count: Int, work: @escaping () -> Void) throws -> (
        StallMonitor.Statistics, [Stall]
    ) {
        let loop = MainLoop.main
        var configuration = StallMonitor.Configuration()
        configuration.perfSampling = perf
        configuration.selfSampling = selfSampling
        let monitor = StallMonitor(loop: loop, configuration: configuration)
        let ended = Locked<[Stall]>([])
        monitor.onStallEnded = { stall in ended.withLock { $0.append(stall) } }
        try monitor.start()
        var fired = 0
        loop.schedule(after: .milliseconds(10), repeating: .milliseconds(80)) { timer in
            work()
            fired += 1
            if fired == count {
                timer.cancel()
                loop.schedule(after: .milliseconds(50)) { _ in loop.stop() }
            }
        }
        loop.run()
        let statistics = monitor.statistics
        monitor.stop()
        return (statistics, ended.withLock { $0 })
    }

    /// One pread() of the whole cached file into `buffer`: 50–150 ms inside the kernel here.
    @inline(never) static func readKernelBound(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) {
        _ = pread(fd, buffer.baseAddress, buffer.count, 0)
    }

    @inline(never) static func spin(milliseconds: UInt64) { spin(nanoseconds: milliseconds * 1_000_000) }

    @inline(never) static func spin(nanoseconds: UInt64) {
        let end = nowNanos() + nanoseconds
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

/// Counts and latencies of several monitor runs, added up.
struct Collected {
    var stalls = 0
    var captureLatencyNanos: [UInt64] = []
    var detectionLatencyNanos: [UInt64] = []
    var perfUnwindNanos: [UInt64] = []
    var selfCaptureNanos: [UInt64] = []
    var selfSamples = 0
    var samples = 0

    mutating func add(_ statistics: StallMonitor.Statistics) {
        stalls += statistics.stalls
        captureLatencyNanos += statistics.captureLatencyNanos
        detectionLatencyNanos += statistics.detectionLatencyNanos
        perfUnwindNanos += statistics.perfUnwindNanos
        selfCaptureNanos += statistics.selfCaptureNanos
        selfSamples += statistics.selfSamples
        samples += statistics.stackSources.values.reduce(0, +)
    }
}
