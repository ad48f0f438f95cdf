import Dispatch
import Foundation

/// Peers that need the process's main thread under `dispatchMain()`; each prints one number
/// and exits. Run as subprocesses by the benchmarks.
enum Peers {
    /// ns/task of a DispatchQueue.main self-reposting chain.
    static func dispatchChain(tasks: Int) -> Never {
        let chain = Chain(tasks: tasks)
        chain.start = nowNanos()
        DispatchQueue.main.async { chain.step() }
        dispatchMain()
    }

    /// The same chain as `LoopBenchmarks.Chain`, on DispatchQueue.main.
    final class Chain: @unchecked Sendable {
        let tasks: Int
        var remaining: Int
        var start: UInt64 = 0

        init(tasks: Int) {
            self.tasks = tasks
            remaining = tasks
        }

        func step() {
            remaining -= 1
            if remaining == 0 {
                print(Double(nowNanos() - start) / Double(tasks))
                exit(0)
            }
            DispatchQueue.main.async { self.step() }
        }
    }

    /// tasks/s of DispatchQueue.main.async from one producer thread.
    static func dispatchCross(tasks: Int) -> Never {
        let done = Box(0)
        let start = nowNanos()
        Thread {
            for _ in 0..<tasks {
                DispatchQueue.main.async {
                    done.value += 1
                    if done.value == tasks {
                        print(Double(tasks) / (Double(nowNanos() - start) / 1e9))
                        exit(0)
                    }
                }
            }
        }.start()
        dispatchMain()
    }
}
