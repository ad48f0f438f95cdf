// Work the app marks as long on purpose (`expectLong`) is still a stall, recorded with the
// scope's label as `Stall.expected`; the app's state (`AppState`) at detection goes with every
// stall; a recorded trace keeps both (record kind 23), and other stalls have neither.
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct ExpectedLongTests {
    @Test(.disabled(if: Sanitizer.thread, "TSan delivers the sampling signal late, away from the running culprit"))
    func anExpectedLongCalloutIsAStallMarkedExpectedWithTheAppsState() async throws {
        AppState.set("screen", "Splash")
        defer { AppState.clear() }
        let run = try await monitored { loop, measure in
            measure.post(loop) { expectLong("splash.load") { spinForStallTest(milliseconds: 80) } }
            measure.post(loop) { spinForStallTest(milliseconds: 60) }
        }
        let ours = run.ended.filter { $0.callout.file == "StallwatchTests/ExpectedLongTests.swift" }
        #expect(ours.count == 2, "\(ours.map(\.callout))")
        guard ours.count == 2 else { return }
        #expect(ours[0].expected == "splash.load")
        #expect(ours[1].expected == nil)
        #expect(ours.allSatisfy { $0.context == ["screen": "Splash"] }, "\(ours.map(\.context))")
        // The scope is an annotation too.
        #expect(ours[0].samples.contains { $0.annotation?.label == "splash.load" })
    }

    /// `expectLong("tiny") { 25 ms }` then 600 ms more in the same callout was a 625 ms hang
    /// "expected", out of every gate: only a stall whose time outside the scope stays within
    /// the budget is expected, whichever comes first.
    @Test(.disabled(if: Sanitizer.thread, "TSan delivers the sampling signal late, away from the running culprit"))
    func aShortScopeDoesNotExcuseTheRestOfTheStall() async throws {
        let run = try await monitored { loop, measure in
            measure.post(loop) {
                expectLong("tiny") { spinForStallTest(milliseconds: 30) }
                spinForStallTest(milliseconds: 150)
            }
            measure.post(loop) {
                spinForStallTest(milliseconds: 150)
                expectLong("late") { spinForStallTest(milliseconds: 30) }
            }
            measure.post(loop) { expectLong("whole") { spinForStallTest(milliseconds: 150) } }
        }
        let ours = run.ended.filter { $0.callout.file == "StallwatchTests/ExpectedLongTests.swift" }
        #expect(ours.map(\.expected) == [nil, nil, "whole"], "\(ours.map(\.expected))")
    }

    @Test func aTraceKeepsTheExpectedReasonAndTheState() throws {
        let path = NSTemporaryDirectory() + "expected-\(UUID().uuidString).swtrace"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let executor = TestExecutor(name: "loading-queue")
        defer { executor.stop() }
        let monitor = HeartbeatMonitor()
        monitor.watch(label: "loading-queue") { executor.execute($0) }
        let recorder = try HeartbeatRecorder(path: path, monitor: monitor)
        try recorder.start()
        #expect(eventually { monitor.statistics.heartbeatsRun > 0 })
        usleep(100_000)
        AppState.set("screen", "Export")
        AppState.set("modal", "true")
        defer { AppState.clear() }
        let done = DispatchSemaphore(value: 0)
        executor.execute {
            expectLong("export.pdf") { spinForStallTest(milliseconds: 80) }
            done.signal()
        }
        done.wait()
        usleep(150_000)
        recorder.stop()
        let trace = DecodedTrace(decoding: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), fileName: path)
        #expect(trace.stalls.count == 1, "\(trace.stalls.map(\.durationNanos))")
        let stall = try #require(trace.stalls.first)
        #expect(stall.expected == "export.pdf")
        #expect(stall.context == ["screen": "Export", "modal": "true"])

        // The CLI: counted apart by report, left out of gate limits unless asked, shown by show.
        let report = try runProduct("stallwatch", ["report", path, "--by", "screen"])
        #expect(report.output.contains("expected     1 stall ("), "\(report.output)")
        #expect(report.output.contains("Stalls: 0,"), "\(report.output)")
        let included = try runProduct("stallwatch", ["report", path, "--by", "screen", "--include-expected"])
        #expect(included.output.contains("Stalls: 1,"), "\(included.output)")
        #expect(included.output.contains("    Export  1 stall,"), "\(included.output)")
        let json = try runProduct("stallwatch", ["report", path, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect((object["expected"] as? [String: Any])?["stalls"] as? Int == 1, "\(json.output)")
        let gate = try runProduct("stallwatch", ["gate", path, "--max-stalls", "0"])
        #expect(gate.exitCode == 0, "\(gate.output)")
        let strict = try runProduct("stallwatch", ["gate", path, "--max-stalls", "0", "--include-expected"])
        #expect(strict.exitCode == 1, "\(strict.output)")
        // The page's stall rows carry both (its tooltip, details and filters show them); the
        // state is a list of key and value strings there, so each is looked for on its own.
        let page = try runProduct("stallwatch", ["report", path, "--html", "-"])
        #expect(["export.pdf", "modal", "true", "screen", "Export"].allSatisfy { page.output.contains("\"\($0)\"") })
        let show = try runProduct("stallwatch", ["show", path, "--stall", "\(stall.id)"])
        #expect(show.output.contains("expected: export.pdf"), "\(show.output)")
        #expect(show.output.contains("app state modal=true, screen=Export"), "\(show.output)")
    }
}
