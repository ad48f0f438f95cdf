import CStallwatchSampler
import CStallwatchShims
import Dispatch
import Foundation
import Glibc
import Stallwatch

/// What reading a sample's awaiting callers costs (docs/async.md): following a context chain
/// (`sw_async_follow`: one bounded process_vm_readv per level, what every capture path does once
/// it found the innermost async frame), and the stack scan of a thread parked in async code — its
/// chain read with it — against the scan of a thread parked in plain code. A stack without an
/// async frame costs the chain nothing but a pass over its return addresses (no system call).
enum AsyncChainBenchmarks {
    static let rounds = 5_000

    static func run() throws {
        _ = sw_async_prepare()
        for depth in [4, 16] { follow(depth: depth) }
        try scanParkedInAsyncCode()
    }

    /// Follows a chain of `depth` contexts laid out as the runtime's (Parent, ResumeParent).
    private static func follow(depth: Int) {
        let words = UnsafeMutablePointer<UInt64>.allocate(capacity: 2 * depth)
        defer { words.deallocate() }
        for level in 0..<depth {
            words[2 * level] = level + 1 < depth ? UInt64(UInt(bitPattern: words + 2 * (level + 1))) : 0
            words[2 * level + 1] = 0x5000_0000 + UInt64(level)
        }
        var chain = sw_async_chain()
        var times: [Double] = []
        for _ in 0..<rounds {
            let start = nowNanos()
            sw_async_follow(UInt64(UInt(bitPattern: words)), &chain)
            times.append(Double(nowNanos() - start) / 1_000)
        }
        let median = percentile(times, 0.5)
        Result(
            name: "async.follow.depth\(depth).p50", value: median, unit: "us",
            fields: [("p99", percentile(times, 0.99)), ("perLevelNs", median * 1_000 / Double(depth))]
        ).printLine()
    }

    /// A pool job parked in `read` three awaits deep, scanned as the watchdog scans it.
    private static func scanParkedInAsyncCode() throws {
        let (times, frames, depth) = try withThreadParkedInRead(what: "async job") { readEnd, tid, finished in
            Task.detached {
                _ = await benchAsyncHandler(readEnd, tid)
                finished.signal()
            }
        } scan: { scanner in
            // Until the scan finds the chain: the job is parked below its awaits.
            for _ in 0..<200 where scanner.lastChainDepth == 0 {
                usleep(20_000)
                _ = scanner.scan()
            }
        }
        Result.percentiles("async.scan", times, peer: "scan parked in plain code", try plainScanTimes())
        Result(
            name: "async.scan.frames", value: Double(frames), unit: "frames",
            fields: [("awaitingCallers", Double(depth))]
        ).printLine()
    }
}

extension AsyncChainBenchmarks {
    /// The scan of a thread parked in `read` outside async code, as many rounds.
    static func plainScanTimes() throws -> [Double] {
        try withThreadParkedInRead(what: "plain thread") { readEnd, tid, finished in
            Thread {
                tid.value = sw_gettid()
                benchScanParkInRead(readEnd)
                finished.signal()
            }.start()
        } scan: { _ in
            usleep(50_000)  // parked in read by then
        }.times
    }

    /// Runs `start` (which parks a thread in `read` of the pipe's read end, sets `tid` and
    /// signals `finished` once released), waits for its tid and for `ready` (given the thread's
    /// scanner), times `rounds / 5` scans, then releases the thread. The scan times in µs, the
    /// last scan's frames and chain depth.
    private static func withThreadParkedInRead(
        what: String, start: (Int32, Box<Int32>, DispatchSemaphore) -> Void, scan ready: (StackScanner) -> Void
    ) throws -> (times: [Double], frames: Int, depth: Int) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw BenchError("pipe failed") }
        defer {
            close(fds[0])
            close(fds[1])
        }
        let tid = Box<Int32>(0)
        let finished = DispatchSemaphore(value: 0)
        start(fds[0], tid, finished)
        while tid.value == 0 { usleep(1_000) }
        let scanner = StackScanner(tid: tid.value)
        ready(scanner)
        var times: [Double] = []
        var frames: [UInt64] = []
        for _ in 0..<(rounds / 5) {
            let began = nowNanos()
            frames = scanner.scan()
            times.append(Double(nowNanos() - began) / 1_000)
        }
        let depth = scanner.lastChainDepth
        var byte: UInt8 = 1
        _ = write(fds[1], &byte, 1)
        guard finished.wait(timeout: .now() + 10) == .success else { throw BenchError("\(what) never released") }
        return (times, frames.count, depth)
    }
}

@inline(never) func benchAsyncHandler(_ fd: Int32, _ tid: Box<Int32>) async -> Int {
    await benchAsyncService(fd, tid) &+ 1
}

@inline(never) func benchAsyncService(_ fd: Int32, _ tid: Box<Int32>) async -> Int {
    await benchAsyncRepository(fd, tid) &* 2
}

@inline(never) func benchAsyncRepository(_ fd: Int32, _ tid: Box<Int32>) async -> Int {
    await Task.yield()
    tid.value = sw_gettid()
    var byte: UInt8 = 0
    return read(fd, &byte, 1)
}
