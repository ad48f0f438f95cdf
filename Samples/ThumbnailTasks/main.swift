// Blocking calls in async code, and the fix. Eight tasks each "fetch a thumbnail" the way code
// ported from threads often does it: a blocking read (here a 120 ms `usleep` standing in for a
// slow file or a synchronous network call) inside an `async` function, so each one holds a
// thread of Swift Concurrency's cooperative pool (one per core) the whole time. Every other task
// of the program waits: a "ping" task, started every 20 ms, measures how long. `--fixed` does the
// blocking work on serial dispatch queues of its own and awaits it through a continuation, so the
// pool stays free. A `HeartbeatMonitor` watches the pool and a `HeartbeatRecorder` writes the trace
// (to `STALLWATCH_TRACE`, else a temporary file whose path it prints).
//
//     swift run ThumbnailTasks            # the pool starves: pings wait for a free thread
//     swift run ThumbnailTasks --fixed    # the blocking reads off the pool
import Dispatch
import Foundation
import Stallwatch
import StallwatchCore

let fixed = CommandLine.arguments.contains("--fixed")

/// A slow read: blocks its thread for 120 ms.
@inline(never) func readThumbnailBlocking(_ index: Int) -> Int {
    usleep(120_000)
    return index * 1_024
}

/// Where the fix runs blocking reads: four serial queues, which libdispatch gives threads of
/// their own. (Not a concurrent queue: on Linux its work shares the worker threads the pool is
/// counted against, so blocking there starves the pool all the same.)
let blockingReads = (0..<4).map { DispatchQueue(label: "thumbnail-reads-\($0)") }

/// The thumbnail `index`, in an async function.
func thumbnail(_ index: Int) async -> Int {
    guard fixed else { return readThumbnailBlocking(index) }  // holds a pool thread 120 ms
    return await withCheckedContinuation { continuation in
        blockingReads[index % blockingReads.count].async {
            continuation.resume(returning: readThumbnailBlocking(index))
        }
    }
}

let monitor = HeartbeatMonitor()
monitor.watchConcurrencyPool()
let tracePath =
    ProcessInfo.processInfo.environment["STALLWATCH_TRACE"]
    ?? NSTemporaryDirectory() + "thumbnail-tasks-\(fixed ? "fixed" : "blocking")-\(getpid()).swtrace"
let recorder = try HeartbeatRecorder(path: tracePath, monitor: monitor)
try recorder.start()

/// How long a task started now waits before it runs, in ms (timed on the main actor, which is
/// not the pool: a nonisolated function would itself wait for a pool thread to start).
@MainActor func ping() async -> Double {
    let sent = DispatchTime.now().uptimeNanoseconds
    let ran = await Task.detached { DispatchTime.now().uptimeNanoseconds }.value
    return Double(ran - sent) / 1e6
}

let (waits, total) = await withTaskGroup(of: Int.self) { group -> ([Double], Int) in
    for index in 0..<8 { group.addTask { await thumbnail(index) } }
    var waits: [Double] = []
    for _ in 0..<20 {
        waits.append(await ping())
        try? await Task.sleep(for: .milliseconds(20))
    }
    var total = 0
    for await size in group { total += size }
    return (waits, total)
}
try? await Task.sleep(for: .milliseconds(100))
recorder.stop()

let stalls = monitor.statistics.stalls
print(
    """
    ThumbnailTasks (\(fixed ? "fixed: blocking reads on serial queues" : "blocking: reads on the pool")), \
    8 thumbnails (\(total / 1_024) KiB)
      pool stalls: \(stalls)
      a new task waited: max \(String(format: "%.1f", waits.max() ?? 0)) ms, \
    median \(String(format: "%.2f", waits.sorted()[waits.count / 2])) ms
      trace: \(tracePath)
    """)
