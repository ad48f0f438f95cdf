import Foundation
import Stallwatch
import StallwatchAnalysis
import StallwatchCore

// stallwatch-bench: the performance harness. One JSON object per line on stdout.
let usage = """
    USAGE: stallwatch-bench <suite>

    SUITES:
      loop      run-loop throughput, cross-thread posts, timer lateness, idle wake-ups
      monitor   per-callout cost of watching, detection latency, capture cost, idle wake-ups;
                then with a CPU hog on every core, as root and as nobody (setpriv), with the
                loop thread's self-sampling on and off
      heartbeat a heartbeat monitor on an executor it does not own: heartbeats, wake-ups and
                watchdog CPU busy and idle, detection latency, duration error
      pool      the Swift Concurrency pool watched: cost per job of the enqueue hook (ratio vs.
                none), watchdog wake-ups while idle, a 100 ms starvation: caught, latency,
                samples naming the blocker
      recall [STALLS [TARGET…]]
                1,000 (or STALLS) injected stalls of every kind among short callouts, hogs on
                every core, recorder on, as root and as nobody: recall, split, invented, lost
                records, duration error, for StallMonitor on MainLoop, for HeartbeatMonitor, for
                an unmodified epoll loop timed by its waits, and for main-queue items and Swift
                jobs timed by the dispatch trampolines (targets: mainloop, heartbeat,
                unmodified.epoll, unmodified.main-queue, unmodified.pool; all by default)
      loop-wait what the preload library's interposed waits cost an event loop per iteration,
                and its dispatch trampolines a main-queue item and a Swift job
      preload [ROUNDS]
                what recording adds to a process that is not a Swift program and runs no loop
                (/bin/true, clang --version): wall time and peak memory with the preload shim,
                and with the Swift preload library preloaded directly, against neither
      scan      the stack scan of a thread parked in DispatchQueue.sync and in read: cost per
                scan and frames found, by CFI unwind against the heuristic scan
      async-chain
                the async context chain: following it (per chain and per level), and the stack
                scan of a thread parked in async code (with its chain) against one parked in
                plain code
      trace     recording cost per event, bytes per event, parse rate, a long fuzz run
      soak [SECONDS] [TASKS_PER_SECOND]
                60 s (default) at 1 M posted tasks/s, monitor on, recorder in full mode:
                rate reached, records lost, resident memory at start and end
      generate-fleet DIR N
                N traces of a fleet (50 builds, 20 hosts, realistic stall mixes) into DIR
      export [STALLS] [MEGABYTES]
                each export format and report --html against plain report, as the built
                stallwatch CLI runs them: time and peak memory ratios, on a trace of 100,000
                (or STALLS) stalls and a full-mode trace of 250 (or MEGABYTES) MiB
      fleet DIR records/s on 1 core and on all cores, report time over `cat DIR/*` time,
                a large trace decoded serially and split between sync markers

    Build in release mode: swift run -c release stallwatch-bench loop
    """

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "loop": try LoopBenchmarks.run()
    case "monitor": try MonitorBenchmarks.run()
    case "monitor-under-load":  // [LABEL]: part 4 of `monitor` alone (with LABEL: in this process)
        if let label = arguments.dropFirst().first { try UnderLoad.run(label: label) } else { try UnderLoad.runBoth() }
    case "recall":  // [STALLS [TARGET…]]: injected stalls per monitor and privilege (1,000), all targets
        let targets = Array(arguments.dropFirst(2))
        guard let stalls = arguments.count > 1 ? Int(arguments[1]) : 1000, stalls > 0,
            targets.allSatisfy(Recall.targets.contains)
        else {
            FileHandle.standardError.write(
                Data(
                    "stallwatch-bench recall [STALLS [TARGET…]] (STALLS > 0; TARGET: \(Recall.targets.joined(separator: ", ")))\n"
                        .utf8))
            exit(2)
        }
        try Recall.runBoth(stalls: stalls, targets: targets.isEmpty ? Recall.targets : targets)
    case "recall-run":  // LABEL STALLS TARGET…: one privilege's part of `recall`, in this process
        guard arguments.count >= 4, let stalls = Int(arguments[2]), stalls > 0 else { exit(2) }
        try Recall.run(label: arguments[1], stalls: stalls, targets: Array(arguments.dropFirst(3)))
    case "scan": try ScanBenchmarks.run()
    case "async-chain": try AsyncChainBenchmarks.run()
    case "loop-wait": LoopWaitBenchmarks.run()
    case "preload":  // [ROUNDS]: rounds of the three variants (61)
        guard let rounds = arguments.count > 1 ? Int(arguments[1]) : 61, rounds > 0 else {
            FileHandle.standardError.write(Data("stallwatch-bench preload [ROUNDS] (ROUNDS > 0)\n".utf8))
            exit(2)
        }
        try PreloadBenchmarks.run(rounds: rounds)
    case "trace": try TraceBenchmarks.run()
    case "heartbeat": try HeartbeatBenchmarks.run()
    case "pool": try PoolBenchmarks.run()
    case "soak":
        let seconds = arguments.count > 1 ? Int(arguments[1]) : 60
        let rate = arguments.count > 2 ? Int(arguments[2]) : 1_000_000
        guard let seconds, let rate, seconds > 1, rate > 0 else {
            FileHandle.standardError.write(
                Data("stallwatch-bench soak: SECONDS (> 1) and TASKS_PER_SECOND (> 0) are whole numbers\n".utf8))
            exit(2)
        }
        try SoakBenchmark.run(seconds: seconds, tasksPerSecond: rate)
    case "generate-fleet":
        guard arguments.count == 3, let count = Int(arguments[2]), count > 0 else {
            FileHandle.standardError.write(Data("stallwatch-bench generate-fleet DIR N (N > 0)\n".utf8))
            exit(2)
        }
        let start = nowNanos()
        let bytes = try FleetGenerator.generate(directory: arguments[1], count: count)
        let seconds = Double(nowNanos() - start) / 1e9
        Result(name: "fleet.generate.traces", value: Double(count), unit: "traces").printLine()
        Result(name: "fleet.generate.bytes", value: Double(bytes) / 1_048_576, unit: "MiB").printLine()
        Result(name: "fleet.generate.seconds", value: seconds, unit: "s").printLine()
    case "fleet":
        guard arguments.count == 2 else {
            FileHandle.standardError.write(Data("stallwatch-bench fleet DIR\n".utf8))
            exit(2)
        }
        try FleetBenchmarks.run(directory: arguments[1])
    case "export":  // [STALLS] [MEGABYTES]
        let stalls = arguments.count > 1 ? Int(arguments[1]) : 100_000
        let megabytes = arguments.count > 2 ? Int(arguments[2]) : 250
        guard let stalls, let megabytes, stalls > 0, megabytes > 0 else {
            FileHandle.standardError.write(Data("stallwatch-bench export [STALLS] [MEGABYTES] (both > 0)\n".utf8))
            exit(2)
        }
        try ExportBenchmarks.run(stalls: stalls, megabytes: megabytes)
    case "export-trace":  // stalls|full SIZE PATH: one of the traces `export` times (in a child)
        guard arguments.count == 4, ["stalls", "full"].contains(arguments[1]), let size = Int(arguments[2]) else {
            exit(2)
        }
        try ExportBenchmarks.writeTrace(arguments[1], size: size, to: arguments[3])
    case "count-trace":  // PATH: records in a trace (to turn `time stallwatch report` into a rate)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: arguments[1])))
        print(DecodedTrace(decoding: bytes).outcome.recordCount)
    case "generate-trace":  // PATH [MB]: a callout-heavy trace for timing `stallwatch report`
        let bytes = TraceBenchmarks.generate(megabytes: Int(arguments.dropFirst(2).first ?? "") ?? 512)
        try Data(bytes).write(to: URL(fileURLWithPath: arguments[1]))
    case "loop-chain-monitored":  // for profilers: the chain with a monitor attached
        let monitor = Stallwatch.StallMonitor(loop: .main)
        try monitor.start()
        print(LoopBenchmarks.chainNanosPerTask(.main, tasks: 5_000_000))
        monitor.stop()
    case "loop-chain":  // for profilers: just our side of the chain benchmark
        print(
            LoopBenchmarks.chainNanosPerTask(
                .main, tasks: Int(arguments.dropFirst().first ?? "") ?? 5_000_000))
    case "peer-dispatch-chain": Peers.dispatchChain(tasks: Int(arguments[1]) ?? 1_000_000)
    case "peer-dispatch-cross": Peers.dispatchCross(tasks: Int(arguments[1]) ?? 1_000_000)
    case "-h", "--help", "help":
        print(usage)
    default:
        FileHandle.standardError.write(Data((usage + "\n").utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("stallwatch-bench: \(error)\n".utf8))
    exit(1)
}
