import Dispatch
import Foundation
import Stallwatch
import Synchronization

/// `stallwatch-bench monitor`, part 4: detection and capture with a CPU hog on every core, as
/// root (this process: the watchdog gets SCHED_FIFO) and as an ordinary user (this binary again,
/// run by `setpriv` as nobody: no SCHED_FIFO, no nice −10), each with the loop thread's
/// self-sampling on and, as the peer, off. One run prints both.
enum UnderLoad {
    /// The privileged figures here, the unprivileged ones from a child; when not root, only
    /// the unprivileged ones (here), and a line saying the privileged ones were skipped.
    static func runBoth() throws {
        guard geteuid() == 0 else {
            Result(name: "monitor.under_load.privileged", value: 0, unit: "skipped: not root").printLine()
            try run(label: "unprivileged")
            return
        }
        try run(label: "privileged")
        try runAsNobody(["monitor-under-load", "unprivileged"], skipped: "monitor.under_load.unprivileged")
    }

    /// Runs this binary again with `arguments` as nobody (`setpriv`: no SCHED_FIFO, no nice −10);
    /// its lines go straight to our stdout. Without setpriv, a line named `skipped` says so.
    static func runAsNobody(_ arguments: [String], skipped: String) throws {
        let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let setpriv else {
            Result(name: skipped, value: 0, unit: "skipped: no setpriv").printLine()
            return
        }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: setpriv)
        child.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", CommandLine.arguments[0]] + arguments
        try child.run()
        child.waitUntilExit()
        if child.terminationStatus != 0 {
            throw BenchError("the unprivileged run (setpriv … \(arguments[0])) exited \(child.terminationStatus)")
        }
    }

    /// Hogs on every core, then 25 ms spins every 80 ms (180 with self-sampling on, 180 off,
    /// alternating in rounds of 60).
    static func run(label: String) throws {
        let hogs = Hogs(count: ProcessInfo.processInfo.activeProcessorCount)
        defer { hogs.stop() }
        var on = Collected()
        var off = Collected()
        var scheduling = ""
        var status = ""
        var firstStackOn: [Double] = []
        var firstStackOff: [Double] = []
        for _ in 0..<3 {
            for selfSampling in [true, false] {
                let (statistics, stalls) = try MonitorBenchmarks.stalls(
                    perf: true, selfSampling: selfSampling, count: 60
                ) {
                    MonitorBenchmarks.spin(milliseconds: 25)
                }
                // When the stall's first stack was taken (the thread's own, or a signal's).
                let firstStacks = stalls.compactMap { stall in
                    stall.samples.first { !$0.frames.isEmpty }.map {
                        Double(Int64($0.time) - Int64(stall.start)) / 1000 - 16_666.667
                    }
                }
                if selfSampling {
                    firstStackOn += firstStacks
                    on.add(statistics)
                    status = statistics.selfSampling.description
                } else {
                    firstStackOff += firstStacks
                    off.add(statistics)
                }
                scheduling = statistics.watchdogScheduling.description
            }
        }
        let prefix = "monitor.under_load.\(label)"
        Result(
            name: "\(prefix).setup", value: Double(hogs.count),
            unit: "hogs; watchdog \(scheduling); self-sampling \(status)"
        )
        .printLine()
        func micros(_ values: [UInt64]) -> [Double] { values.map { Double($0) / 1000 } }
        let detection = micros(on.detectionLatencyNanos)
        let detectionOff = micros(off.detectionLatencyNanos)
        Result.percentiles(
            "\(prefix).detection_latency", detection, peer: "self-sampling off", detectionOff,
            goals: ("<= 200 us", "<= 1000 us"))
        // A stack's capture. The loop thread's own: the handler's entry to the stack ready (no
        // request: the kernel's tick is on time while the thread runs). The watchdog's: signal
        // sent to stack ready, which includes any wait of the stalled thread for a CPU.
        let own = micros(on.selfCaptureNanos)
        let signalOn = micros(on.captureLatencyNanos)
        let signalOff = micros(off.captureLatencyNanos)
        Result.percentiles(
            "\(prefix).own_capture", own, peer: "signal capture, self-sampling off", signalOff,
            goals: ("<= 30 us", "<= 300 us"))
        Result.percentiles("\(prefix).signal_capture", signalOn, peer: "self-sampling off", signalOff)
        // Budget expiry → the instant the stall's first stack shows (however it was taken).
        Result.percentiles(
            "\(prefix).first_stack", firstStackOn.map { max(0, $0) }, peer: "self-sampling off",
            firstStackOff.map { max(0, $0) })
        Result(
            name: "\(prefix).own_samples", value: on.samples == 0 ? 0 : Double(on.selfSamples) / Double(on.samples),
            unit: "share of samples", goal: "most"
        ).printLine()
        Result(
            name: "\(prefix).stalls_detected", value: Double(on.stalls), unit: "stalls", peer: "self-sampling off",
            peerValue: Double(off.stalls), goal: "180"
        ).printLine()
    }
}

/// Threads that spin until stopped, one per core: a machine with every CPU busy.
final class Hogs: Sendable {
    let count: Int
    private let running = Atomic<Bool>(true)
    private let done = DispatchGroup()

    init(count: Int) {
        self.count = count
        for _ in 0..<count {
            done.enter()
            Thread { [self] in
                var x: UInt64 = 1
                while running.load(ordering: .relaxed) {
                    for _ in 0..<100_000 { x = x &* 6_364_136_223_846_793_005 &+ 1 }
                }
                if x == 0 { print("") }
                done.leave()
            }.start()
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        done.wait()
    }
}
