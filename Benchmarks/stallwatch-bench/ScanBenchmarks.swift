import CStallwatchShims
import Dispatch
import Foundation
import Glibc
import Stallwatch

/// The stack scan of a thread parked in a system call (`StackScanner.scan`, what the watchdog
/// does for every sample of such a thread): its cost by CFI unwind against the heuristic scan it
/// replaces, and the frames each finds, for a thread in `DispatchQueue.sync` onto a busy queue
/// and one in `read` on an empty pipe.
enum ScanBenchmarks {
    static let rounds = 2_000

    static func run() throws {
        let queue = DispatchQueue(label: "bench.scan.busy")
        let gate = DispatchSemaphore(value: 0)
        let busy = DispatchSemaphore(value: 0)
        queue.async {
            busy.signal()
            gate.wait()
        }
        busy.wait()
        try measure("scan.sync", parked: { benchScanParkInSync(queue) }, release: { gate.signal() })

        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw BenchError("pipe failed") }
        defer {
            close(fds[0])
            close(fds[1])
        }
        let readEnd = fds[0]
        try measure(
            "scan.read", parked: { benchScanParkInRead(readEnd) },
            release: {
                var byte: UInt8 = 1
                _ = write(fds[1], &byte, 1)
            })
    }

    private static func measure(
        _ name: String, parked: @escaping @Sendable () -> Void, release: () -> Void
    ) throws {
        let started = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let tid = Box<Int32>(0)
        Thread {
            tid.value = sw_gettid()
            started.signal()
            parked()
            finished.signal()
        }.start()
        started.wait()
        let scanner = StackScanner(tid: tid.value)
        // Parked: the scan finds the same stack twice, 50 ms apart.
        var first: [UInt64] = []
        for _ in 0..<200 {
            usleep(50_000)
            let now = scanner.scan()
            if now.count > 1 && now == first { break }
            first = now
        }
        var unwind: [Double] = []
        var heuristic: [Double] = []
        var frames = (unwind: 0, heuristic: 0)
        for _ in 0..<rounds {
            var start = nowNanos()
            frames.unwind = scanner.scan(using: .unwind).count
            unwind.append(Double(nowNanos() - start) / 1_000)
            start = nowNanos()
            frames.heuristic = scanner.scan(using: .heuristic).count
            heuristic.append(Double(nowNanos() - start) / 1_000)
        }
        release()
        guard finished.wait(timeout: .now() + 10) == .success else { throw BenchError("\(name): never released") }
        Result.percentiles(name, unwind, peer: "heuristic scan", heuristic)
        Result(
            name: "\(name).frames", value: Double(frames.unwind), unit: "frames", peer: "heuristic scan",
            peerValue: Double(frames.heuristic)
        ).printLine()
    }
}

@inline(never) func benchScanParkInSync(_ queue: DispatchQueue) {
    queue.sync { benchScanKeep() }
    benchScanKeep()
}

@inline(never) func benchScanParkInRead(_ fd: Int32) {
    var byte: UInt8 = 0
    _ = read(fd, &byte, 1)
    benchScanKeep()
}

/// Keeps each park's call a call (not a tail call that would take its frame away).
@inline(never) func benchScanKeep() { _ = nowNanos() }
