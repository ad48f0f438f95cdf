// A program that never heard of Stallwatch: only dispatchMain() and DispatchQueue.main. One
// main-queue block computes for 60 ms (a stall); then the queue idles for a second and the
// program counts how often its main-queue thread woke meanwhile. Watch it unmodified with
//   stallwatch record -o dispatch.swtrace -- .build/debug/DispatchMainApp
// `--never-drain` never services the main queue (the main thread just sleeps), for the
// warning the preloaded monitor gives then; `--async` stalls in @MainActor async code instead.
// `--back-to-back` queues two blocks that compute 90 and 130 ms, one right behind the other;
// `--jobs` runs one long Swift job beside a free pool thread, then starves the pool with as many
// blocking jobs as it has threads, beside a thread named like a pool thread. Each culprit prints
// how long it took once its block or job ended (the print is then no part of what it measured).
// Flags: --stall-ms N (60), --idle-s S (1).
import Dispatch
import Foundation
import Synchronization

let arguments = CommandLine.arguments
func value(_ flag: String, _ fallback: Double) -> Double {
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return fallback }
    return Double(arguments[index + 1]) ?? fallback
}
let stallMilliseconds = value("--stall-ms", 60)
let idleSeconds = value("--idle-s", 1)

func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// The culprit: hashes until `milliseconds` have passed, on the main queue.
@inline(never) func crunchNumbers(milliseconds: Double) -> UInt64 {
    var hash: UInt64 = 1_469_598_103_934_665_603
    let end = now() + milliseconds / 1000
    var round: UInt64 = 0
    while now() < end {
        for byte in 0..<4096 { hash = (hash ^ UInt64(byte & 0xff) ^ round) &* 1_099_511_628_211 }
        round += 1
    }
    return hash
}

/// The calling thread's /proc directory ("/proc/<pid>/task/<tid>") and its voluntary context
/// switches: each one is the thread going to sleep, so the next wake-up is one more.
func currentThreadPath() -> String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")).map { "/proc/" + $0 } ?? ""
}
func wakeups(_ threadPath: String) -> Int {
    guard let status = try? String(contentsOfFile: threadPath + "/status", encoding: .utf8) else { return -1 }
    let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
    return line.flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? -1
}

/// `--async`: the stall is a `@MainActor` request handler that awaits a service that awaits a
/// repository that computes on the main queue, each a real suspension away from the next (the
/// repository yields first), so its callers live only in their async contexts.
@MainActor enum Requests {
    @inline(never) static func handle() async -> UInt64 { await service() &+ 1 }
    @inline(never) static func service() async -> UInt64 { await repository() &* 3 }
    @inline(never) static func repository() async -> UInt64 {
        await Task.yield()
        return crunchNumbers(milliseconds: stallMilliseconds)
    }
}

if arguments.contains("--async") {
    // Let a watcher learn the queue's thread first, as below.
    DispatchQueue.main.asyncAfter(deadline: .now() + 0.3) {
        Task { @MainActor in
            let start = now()
            let hash = await Requests.handle()
            print(String(format: "stalled %.1f ms in async code (hash %llx)", (now() - start) * 1000, hash))
            DispatchQueue.main.asyncAfter(deadline: .now() + 0.3) { exit(0) }
        }
    }
    dispatchMain()
}

/// The culprit of a long job: sleeps (blocks its pool thread) for `milliseconds`.
@inline(never) func waitForTheDisk(milliseconds: Double) {
    usleep(UInt32(milliseconds * 1000))
}

if arguments.contains("--back-to-back") {
    let took = Mutex<[String]>([])
    DispatchQueue.main.asyncAfter(deadline: .now() + 0.3) {
        for milliseconds in [90.0, 130.0] {
            DispatchQueue.main.async {
                let start = now()
                _ = crunchNumbers(milliseconds: milliseconds)
                let line = String(format: "block of %.0f ms took %.1f ms", milliseconds, (now() - start) * 1000)
                took.withLock { $0.append(line) }
            }
        }
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.6) {
            for line in took.withLock({ $0 }) { print(line) }
            exit(0)
        }
    }
    dispatchMain()
}

if arguments.contains("--jobs") {
    // A thread named as libdispatch names its pool threads that never runs a Swift job (as
    // sourcekitd's workers inherit the name): no pool thread, though it computes while the pool
    // starves (only then: the jobs keep the CPU to themselves before).
    let starving = DispatchSemaphore(value: 0)
    let impostor = Thread {
        try? "oot.default-qos".write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
        // /proc/thread-self is a link to "<pid>/task/<tid>".
        let tid =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"))?
            .split(separator: "/").last.map(String.init) ?? "?"
        print("impostor thread \(tid)")
        starving.wait()
        _ = crunchNumbers(milliseconds: stallMilliseconds)
    }
    impostor.start()
    Task.detached {
        // Let a watcher see the pool's first jobs before the long one.
        try? await Task.sleep(for: .milliseconds(300))
        let start = now()
        _ = crunchNumbers(milliseconds: stallMilliseconds)
        let end = now()
        try? await Task.sleep(for: .milliseconds(300))
        print(String(format: "long job took %.1f ms (%.0f to %.0f ns)", (end - start) * 1000, start * 1e9, end * 1e9))
        // As many blocking jobs as the pool has threads: a job queued behind them waits.
        let width = ProcessInfo.processInfo.activeProcessorCount
        starving.signal()
        let blocking = await withTaskGroup(of: Double.self) { group in
            for _ in 0..<width {
                group.addTask {
                    let start = now()
                    waitForTheDisk(milliseconds: stallMilliseconds)
                    return (now() - start) * 1000
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for took in blocking { print(String(format: "blocking job took %.1f ms", took)) }
        try? await Task.sleep(for: .milliseconds(300))
        exit(0)
    }
    dispatchMain()
}

if arguments.contains("--never-drain") {
    print("never draining the main queue")
    Thread.sleep(forTimeInterval: value("--sleep-s", 2))
    exit(0)
}

DispatchQueue.main.async {
    print("started")
    // Let a watcher learn the queue's thread and its idle wait before the stall.
    DispatchQueue.main.asyncAfter(deadline: .now() + 0.3) {
        let start = now()
        let hash = crunchNumbers(milliseconds: stallMilliseconds)
        print(String(format: "stalled %.1f ms (hash %llx)", (now() - start) * 1000, hash))
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.3) {
            let thread = currentThreadPath()
            let before = wakeups(thread)
            let idleStart = now()
            DispatchQueue.main.asyncAfter(deadline: .now() + idleSeconds) {
                // The block that ends the idle second woke a thread once itself.
                let woke = wakeups(thread) - before
                print(String(format: "idle %.2f s: main-queue thread woke %d times", now() - idleStart, woke))
                exit(0)
            }
        }
    }
}
dispatchMain()
