import Foundation

// stallwatch-bench: the performance harness. One JSON object per line on stdout.
let usage = """
    USAGE: stallwatch-bench <suite>

    SUITES:
      loop      run-loop throughput, cross-thread posts, timer lateness, idle wake-ups

    Build in release mode: swift run -c release stallwatch-bench loop
    """

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "loop": try LoopBenchmarks.run()
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
