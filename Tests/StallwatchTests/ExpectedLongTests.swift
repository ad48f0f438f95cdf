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

    /// The tally reads the scopes' own start and end, so how late the watchdog looks does not
    /// matter: a stall first looked at after its scope ended (a watchdog held up by a loaded or
    /// paused machine) is still expected; a stall that outlives its scope by more than the
    /// budget is not. Each stall here is timed around a scope that really opens and closes.
    @Test func theScopesOwnTimesSayWhetherAStallWasExpected() {
        let ms: UInt64 = 1_000_000
        let budget = 16 * ms
        func settled(_ scopes: AnnotationScopes, from start: UInt64, to end: UInt64?) -> String? {
            var stall = Stall(
                id: 1, start: start, end: end, tier: .hitch,
                callout: CalloutIdentity(kind: .post, file: "t", line: 1, phase: .beforeTimers))
            var tally = ExpectedScopeTally(scopes: scopes)
            tally.settle(&stall, budget: budget)
            return stall.expected
        }
        // Looked at only once the scope ended.
        let scopes = AnnotationScopes()
        let start = MainLoop.monotonicNanos()
        let token = scopes.push("export.pdf", nil, expected: true)
        let inner = scopes.push("render", nil, expected: true)
        scopes.pop(inner)
        scopes.pop(token)
        let end = MainLoop.monotonicNanos()
        #expect(settled(scopes, from: start, to: end) == "export.pdf")
        // The same scope 100 ms into a stall (or 100 ms before its end) excuses none of it.
        #expect(settled(scopes, from: start - 100 * ms, to: end) == nil)
        #expect(settled(scopes, from: start, to: end + 100 * ms) == nil)
        // A stall that ended before the scope began, or began after it ended, is not in it.
        #expect(settled(scopes, from: start - 50 * ms, to: start - 40 * ms) == nil)
        // Within the budget outside it, whichever side, it is excused.
        #expect(settled(scopes, from: start - 10 * ms, to: end + 5 * ms) == "export.pdf")
        // A scope still open covers the stall to its end, ended or not.
        let open = scopes.push("import", nil, expected: true)
        defer { scopes.pop(open) }
        let now = MainLoop.monotonicNanos()
        #expect(settled(scopes, from: now, to: now + 200 * ms) == "import")
        #expect(settled(scopes, from: now, to: nil) == "import")
        // Scopes one after the other cover a stall together; it is named by the first.
        #expect(settled(scopes, from: start - 10 * ms, to: now + 200 * ms) == "export.pdf")
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
