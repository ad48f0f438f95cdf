import Foundation
import Stallwatch
import StallwatchAnalysis
import StallwatchCore

/// `stallwatch-bench soak [SECONDS]`: the loop at a sustained rate of posted tasks (1 M/s by
/// default) for a minute with the monitor on and the recorder in `full` mode (every callout
/// recorded), reporting the rate reached, records lost, and resident memory at the start and
/// the end (it must stay flat: no growth with the number of callouts).
enum SoakBenchmark {
    static func run(seconds: Int, tasksPerSecond: Int) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-soak-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("soak.swtrace").path
        let loop = MainLoop.main
        let recorder = try TraceRecorder(path: path, loop: loop, mode: .full)
        try recorder.start()

        let completed = Box(0)
        let posted = Box(0)
        let start = nowNanos()
        let warmUpEnd = start + 1_000_000_000
        let end = start + UInt64(seconds) * 1_000_000_000
        var rssSamples: [(second: Int, bytes: Int)] = []
        var rssAtWarmUp = 0
        let task: @Sendable () -> Void = {
            TraceBenchmarks.spin(nanoseconds: 100)
            completed.value += 1
        }
        // Every millisecond, post what the target rate owes by now: the rate holds even when a
        // tick comes late, and the loop interleaves posts (128 per iteration) with the timer.
        loop.schedule(after: .milliseconds(1), repeating: .milliseconds(1)) { timer in
            let now = nowNanos()
            if rssAtWarmUp == 0 && now >= warmUpEnd { rssAtWarmUp = residentBytes() }
            let second = Int((now - start) / 1_000_000_000)
            if second > (rssSamples.last?.second ?? -1) { rssSamples.append((second, residentBytes())) }
            if now >= end {
                timer.cancel()
                loop.stop()
                return
            }
            let owed = Int(Double(now - start) / 1e9 * Double(tasksPerSecond)) - posted.value
            for _ in 0..<max(0, owed) { loop.post(task) }
            posted.value += max(0, owed)
        }
        loop.run()
        let elapsed = Double(nowNanos() - start) / 1e9
        let rssAtEnd = residentBytes()
        let stalls = recorder.monitor.statistics.stalls
        recorder.stop()

        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let trace = DecodedTrace(decoding: bytes, fileName: path)
        Result(
            name: "soak.tasks_per_second", value: Double(completed.value) / elapsed, unit: "tasks/s",
            goal: ">= \(tasksPerSecond) for \(seconds) s"
        ).printLine()
        Result(name: "soak.seconds", value: elapsed, unit: "s").printLine()
        Result(name: "soak.tasks", value: Double(completed.value), unit: "tasks").printLine()
        Result(name: "soak.callouts_recorded", value: Double(trace.calloutCount), unit: "events").printLine()
        Result(name: "soak.lost_records", value: Double(trace.lostRecords), unit: "events", goal: "0").printLine()
        Result(name: "soak.stalls", value: Double(stalls), unit: "stalls").printLine()
        Result(name: "soak.trace_size", value: Double(bytes.count) / 1e6, unit: "MB").printLine()
        Result(name: "soak.rss_start", value: Double(rssAtWarmUp) / 1e6, unit: "MB").printLine()
        Result(name: "soak.rss_end", value: Double(rssAtEnd) / 1e6, unit: "MB").printLine()
        Result(
            name: "soak.rss_growth", value: Double(rssAtEnd - rssAtWarmUp) / 1e6, unit: "MB",
            goal: "flat (a few MB of noise)"
        ).printLine()
        for sample in rssSamples where sample.second % 10 == 0 && sample.second > 0 {
            Result(name: "soak.rss_at_\(sample.second)s", value: Double(sample.bytes) / 1e6, unit: "MB").printLine()
        }
        if !trace.outcome.endedCleanly {
            throw BenchError("soak trace did not decode cleanly: \(trace.outcome.problems)")
        }
    }

    /// Resident set size from /proc/self/statm (pages × page size).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
