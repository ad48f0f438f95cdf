// The concurrency sample: eight tasks that block in a synchronous read starve Swift
// Concurrency's pool (a new task waits for them), and the pool monitor records it, the blocking
// function on the stack; the fixed variant (the reads on serial dispatch queues) leaves the pool
// free and records no starvation in them.
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct ThumbnailTasksSampleTests {
    /// ThumbnailTasks run with `arguments`: its trace's stalls, and its summary.
    func run(_ arguments: [String]) throws -> (stalls: [Stall], output: String) {
        let path = NSTemporaryDirectory() + "thumbnails-\(UUID().uuidString).swtrace"
        defer { unlink(path) }
        let run = try runProduct("ThumbnailTasks", arguments, environment: ["STALLWATCH_TRACE": path])
        #expect(run.exitCode == 0, "\(run)")
        let trace = DecodedTrace(decoding: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), fileName: path)
        return (trace.stalls, run.output)
    }

    func blockedInTheRead(_ stall: Stall) -> Bool {
        stall.samples.contains { $0.frames.contains { $0.symbol?.contains("readThumbnailBlocking") == true } }
    }

    @Test(.disabled(if: Sanitizer.thread, "TSan's deferred signals move the samples away from the reads"))
    func blockingReadsStarveThePoolAndTheFixDoesNot() throws {
        let blocking = try run([])
        let starved = blocking.stalls.filter { $0.callout.label == HeartbeatMonitor.poolLabel && blockedInTheRead($0) }
        // Eight 120 ms reads on a pool of (here) two threads: about 480 ms.
        #expect(starved.count >= 1, "\(blocking.output)")
        #expect(starved.map(StallAccounting.duration).reduce(0, +) > 200_000_000, "\(blocking.output)")
        let fixed = try run(["--fixed"])
        #expect(!fixed.stalls.contains(where: blockedInTheRead), "\(fixed.output)")
        print(blocking.output + fixed.output)
    }
}
