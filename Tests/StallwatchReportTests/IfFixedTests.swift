// What a fix would buy: each signature's `ifFixed` is the run's hitch ratio, hang rate, dropped
// frames and FPS without its stalls (the frames a stall dropped estimated from the frame clock's
// intervals, never more than an interval dropped), and `gate --what-if` checks the limits with
// those stalls left out.
import Foundation
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct IfFixedTests {
    let directory = TemporaryDirectory()

    /// 50 s is the fixture's clock base; its stalls start a second in.
    static func interval(_ second: UInt64, delivered: UInt64, dropped: UInt64) -> TraceRecord.FrameClock {
        TraceRecord.FrameClock(
            intervalStart: (50 + second) * FleetFixture.second, intervalLength: FleetFixture.second,
            expected: delivered + dropped, delivered: delivered, dropped: dropped)
    }

    /// A 500 ms parse (a hang) in second 1, which dropped 29 frames, and a 100 ms save in
    /// second 2, which dropped 5: 180 frames due over 3 s (the run time), 146 delivered.
    var trace: String {
        directory.write(
            "fixable.swtrace",
            FleetFixture.trace(
                host: "h1", version: "1.0", buildByte: 0xaa, offset: 0, stalls: [(.parse, 500), (.save, 100)],
                frames: [
                    Self.interval(0, delivered: 60, dropped: 0), Self.interval(1, delivered: 31, dropped: 29),
                    Self.interval(2, delivered: 55, dropped: 5),
                ]))
    }

    func signatures(_ path: String) throws -> [String: [String: Any]] {
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["report", path, "--json"]).output.utf8))
                as? [String: Any])
        #expect((json["frames"] as? [String: Any])?["dropped"] as? Int == 34)
        let list = try #require(json["signatures"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: list.map { ($0["category"] as? String ?? "?", $0) })
    }

    @Test func eachSignatureSaysWhatItsFixWouldBuy() throws {
        let byCategory = try signatures(trace)
        let parse = try #require(byCategory["compute"]?["ifFixed"] as? [String: Any])
        // Its 30 frame periods claim all 29 frames its second dropped.
        #expect(parse["droppedFrames"] as? Int == 5)
        #expect(parse["fps"] as? Double == 58.33)
        // Left: the save's 83.3 ms of overrun in 3 s, and no hang.
        #expect(parse["hitchRatioMsPerSecond"] as? Double == 27.778)
        #expect(parse["hitchGrade"] as? String == "bad")
        #expect(parse["hangRateSecondsPerHour"] as? Double == 0)
        let save = try #require(byCategory["io"]?["ifFixed"] as? [String: Any])
        // Its 6 frame periods claim 6 frames of an interval that dropped 5: it gives back 5.
        #expect(save["droppedFrames"] as? Int == 29)
        #expect(save["fps"] as? Double == 50.33)
        #expect(save["hitchRatioMsPerSecond"] as? Double == 161.111)
        #expect(save["hangRateSecondsPerHour"] as? Double == 600)
    }

    @Test func theTextAndThePageShowIt() throws {
        let path = trace
        let text = CLIRun(["report", path]).output
        #expect(
            text.contains("   if fixed: hitch ratio 27.8 ms/s (bad), hang rate 0.0 s/h, 5 dropped frames, 58.3 fps\n"),
            "\(text)")
        let page = directory.path + "/fixable.html"
        #expect(CLIRun(["report", path, "--html", page]).exitCode == 0)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("\"ifFixed\":{\"hitchRatioMsPerSecond\":27.778,\"hitchGrade\":\"bad\""))
        #expect(html.contains("'if fixed: hitch ratio '"))
    }

    @Test func withoutAFrameClockOnlyTheRatesAreGiven() throws {
        let path = directory.write(
            "clockless.swtrace",
            FleetFixture.trace(host: "h1", version: "1.0", buildByte: 0xaa, offset: 0, stalls: [(.parse, 500)]))
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["report", path, "--json"]).output.utf8))
                as? [String: Any])
        let fixed = try #require((json["signatures"] as? [[String: Any]])?.first?["ifFixed"] as? [String: Any])
        #expect(fixed["droppedFrames"] is NSNull || fixed["droppedFrames"] == nil)
        #expect(fixed["hitchRatioMsPerSecond"] as? Double == 0)
    }

    @Test func theGateChecksTheLimitsAsIfTheSignatureWereFixed() throws {
        let path = trace
        let parse = try #require(
            (try JSONSerialization.jsonObject(with: Data(CLIRun(["report", path, "--json"]).output.utf8))
                as? [String: Any])?["signatures"] as? [[String: Any]]
        ).first { $0["category"] as? String == "compute" }
        let text = "compute: " + (parse?["frames"] as? [String] ?? []).joined(separator: " ← ")
        let limits = ["--max-hangs", "0", "--max-hitch-ratio", "40"]
        let now = CLIRun(["gate", path] + limits)
        #expect(now.exitCode == 1, "\(now.output)")
        let fixed = CLIRun(["gate", path] + limits + ["--what-if", text])
        #expect(fixed.exitCode == 0, "\(fixed.output)\(fixed.error)")
        #expect(
            fixed.output == """
                As if fixed: \(text) (1 stall left out)
                Gate: 1 trace, 1 stall, 3.00 s
                  PASS  hangs        0 (limit 0)
                  PASS  hitch-ratio  27.778 ms/s (limit 40.000 ms/s)
                Result: PASS (2 limits)

                """)
        let unknown = CLIRun(["gate", path, "--max-hangs", "0", "--what-if", "compute: nowhere()"])
        #expect(unknown.exitCode == 2)
        #expect(unknown.error.contains("--what-if 'compute: nowhere()': no stall of the traces has this signature"))
    }
}
