// A congested iteration (callouts that overran the budget together, none alone) is recorded
// one by one: its time, and the call sites whose callouts took it whenever the recorder keeps
// callouts (full mode, or the flight recorder in stalls mode).
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct TraceCongestionTests {
    /// Records one iteration of 8 × 4 ms posts from one line and 4 × 1 ms from another (about
    /// 36 ms against the 16.7 ms budget, no callout near it), in `mode`.
    func recordCongestion(mode: TraceMode, flightWindow: Duration = TraceRecorder.defaultFlightWindow) async throws -> (
        trace: DecodedTrace, heavyLine: UInt32
    ) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-congestion-\(UUID())")
            .path
        defer { unlink(path) }
        let heavyLine = Box<UInt32>(0)
        try await onLoopThreadThrowing { loop in
            let recorder = try TraceRecorder(path: path, loop: loop, mode: mode, flightWindow: flightWindow)
            try recorder.start()
            // Let the recorder attach before the congested burst is posted.
            let attached = Box(false)
            loop.schedule(after: .milliseconds(50)) { _ in attached.value = true }
            while !attached.value { loop.runOnce(timeout: .milliseconds(100)) }
            heavyLine.value = #line + 1
            for _ in 0..<8 { loop.post(label: "heavy") { sleepForStallTest(milliseconds: 4) } }
            for _ in 0..<4 { loop.post(label: "light") { sleepForStallTest(milliseconds: 1) } }
            let done = Box(false)
            loop.schedule(after: .milliseconds(150)) { _ in done.value = true }
            while !done.value { loop.runOnce(timeout: .milliseconds(100)) }
            recorder.stop()
        }
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        return (DecodedTrace(decoding: bytes, fileName: path), heavyLine.value)
    }

    @Test(arguments: [TraceMode.full, .stalls])
    func theSitesOfACongestedIterationAreBlamed(mode: TraceMode) async throws {
        let (trace, heavyLine) = try await recordCongestion(mode: mode)
        #expect(trace.outcome.endedCleanly, "\(trace.outcome.problems)")
        let counted = trace.congestion.reduce(0) { $0 + $1.count }
        #expect(counted >= 1)
        // Every iteration the loop counted is described, and only those.
        #expect(UInt64(trace.congestedIterations.count) == counted)
        let burst = try #require(trace.congestedIterations.max { $0.duration < $1.duration })
        #expect(burst.duration > 16_666_667)
        #expect(burst.callouts >= 12)
        let top = try #require(burst.sites.first)
        let site = try #require(trace.callSites[top.site])
        #expect(site.label == "heavy")
        #expect(site.line == heavyLine)
        #expect(top.count == 8)
        #expect(top.nanos >= 8 * 4_000_000)
        #expect(burst.sites.contains { trace.callSites[$0.site]?.label == "light" && $0.count == 4 })
        #expect(trace.stalls.isEmpty, "\(trace.stalls.map(\.duration))")
    }

    @Test func stallsModeWithoutTheFlightRecorderRecordsTheIterationWithoutSites() async throws {
        let (trace, _) = try await recordCongestion(mode: .stalls, flightWindow: .zero)
        let counted = trace.congestion.reduce(0) { $0 + $1.count }
        #expect(counted >= 1)
        #expect(UInt64(trace.congestedIterations.count) == counted)
        #expect(trace.congestedIterations.allSatisfy { $0.sites.isEmpty && $0.callouts == 0 })
        #expect(trace.congestedIterations.contains { $0.duration > 16_666_667 })
    }
}
