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
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw BenchError("pipe failed") }
        defer {
            close(fds[0])
            close(fds[1])
        }
        let tid = Box<Int32>(0)
        let finished = DispatchSemaphore(value: 0)
        let readEnd = fds[0]
        Task.detached {
            _ = await benchAsyncHandler(readEnd, tid)
            finished.signal()
        }
        while tid.value == 0 { usleep(1_000) }
        let scanner = StackScanner(tid: tid.value)
        var frames: [UInt64] = []
        for _ in 0..<200 where scanner.lastChainDepth == 0 {
            usleep(20_000)
            frames = scanner.scan()
        }
        var times: [Double] = []
        for _ in 0..<(rounds / 5) {
            let start = nowNanos()
            frames = scanner.scan()
            times.append(Double(nowNanos() - start) / 1_000)
        }
        let depth = scanner.lastChainDepth
        var byte: UInt8 = 1
        _ = write(fds[1], &byte, 1)
        guard finished.wait(timeout: .now() + 10) == .success else { throw BenchError("async job never released") }
        Result.percentiles("async.scan", times, peer: "scan parked in plain code", try plainScanTimes())
        Result(
            name: "async.scan.frames", value: Double(frames.count), unit: "frames",
            fields: [("awaitingCallers", Double(depth))]
        ).printLine()
    }
}

extension AsyncChainBenchmarks {
    /// The scan of a thread parked in `read` outside async code, as many rounds.
    static func plainScanTimes() throws -> [Double] {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw BenchError("pipe failed") }
        defer {
            close(fds[0])
            close(fds[1])
        }
        let tid = Box<Int32>(0)
        let finished = DispatchSemaphore(value: 0)
        let readEnd = fds[0]
        Thread {
            tid.value = sw_gettid()
            benchScanParkInRead(readEnd)
            finished.signal()
        }.start()
        while tid.value == 0 { usleep(1_000) }
        usleep(50_000)
        let scanner = StackScanner(tid: tid.value)
        var times: [Double] = []
        for _ in 0..<(rounds / 5) {
            let start = nowNanos()
            _ = scanner.scan()
            times.append(Double(nowNanos() - start) / 1_000)
        }
        var byte: UInt8 = 1
        _ = write(fds[1], &byte, 1)
        guard finished.wait(timeout: .now() + 10) == .success else { throw BenchError("plain thread never released") }
        return times
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
