// The hang-rate gate tells the feed screen's remedy apart: the blocking FeedScreen (a SQLite
// query of half a second to a second on the main thread) fails `gate --max-hang-rate 0`, and the fixed
// one (the query off the loop) passes it.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct SampleHangRateTests {
    /// `stallwatch gate --max-hang-rate 0` of a fresh recording of FeedScreen with `arguments`.
    func gate(_ arguments: [String]) throws -> ChildRun {
        let path = NSTemporaryDirectory() + "hang-rate-FeedScreen-\(UUID().uuidString).swtrace"
        defer { unlink(path) }
        let run = try runProduct("FeedScreen", arguments, environment: ["STALLWATCH_TRACE": path])
        #expect(run.exitCode == 0, "\(run)")
        return try runProduct("stallwatch", ["gate", "--max-hang-rate", "0", path])
    }

    @Test(
        .disabled(
            if: Sanitizer.thread, "TSan slows the fixed variant's start-up into hangs of its own"))
    func theBlockingFeedFailsTheHangRateGateAndTheFixedOnePasses() throws {
        let blocking = try gate([])
        #expect(blocking.exitCode == 1, "\(blocking.output)")
        #expect(blocking.output.contains("FAIL  hang-rate"), "\(blocking.output)")
        let fixed = try gate(["--fixed"])
        #expect(fixed.exitCode == 0, "\(fixed.output)")
        #expect(fixed.output.contains("PASS  hang-rate  0.000 s/h"), "\(fixed.output)")
    }
}
