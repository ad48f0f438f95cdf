// The flight recorder: the trace writer keeps the loop's last seconds of callouts in memory, in
// either mode, and each stall's `stallLeadUp` record says what ran just before it.
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct FlightRecorderTests {
    /// Records, in `mode`, ten 2 ms posts labelled "before" 50 ms into the recording, then
    /// 100 ms later a 60 ms stall ("stall"), and decodes the trace (kept at the returned path;
    /// the caller removes it).
    func recordLeadUp(mode: TraceMode, flightWindow: Duration = TraceRecorder.defaultFlightWindow) async throws
        -> (trace: DecodedTrace, path: String)
    {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-flight-\(UUID())").path
        let trace = try await recordedTrace(
            at: path, mode: mode, flightWindow: flightWindow, runFor: .milliseconds(450)
        ) {
            loop in
            loop.schedule(after: .milliseconds(50)) { _ in
                for _ in 0..<10 { loop.post(label: "before") { sleepForStallTest(milliseconds: 2) } }
                loop.schedule(after: .milliseconds(100), label: "stall") { _ in sleepForStallTest(milliseconds: 60) }
            }
        }
        return (trace, path)
    }

    @Test(arguments: [TraceMode.stalls, .full])
    func eachStallSaysWhatRanJustBeforeIt(mode: TraceMode) async throws {
        let (trace, path) = try await recordLeadUp(mode: mode)
        defer { unlink(path) }
        #expect(trace.outcome.endedCleanly, "\(trace.outcome.problems)")
        let stall = try #require(trace.bareStalls.first { $0.callout.label == "stall" }, "\(trace.bareStalls)")
        let leadUp = try #require(trace.leadUps[stall.id], "no lead-up for stall \(stall.id)")
        func label(_ site: UInt64) -> String? { trace.callSites[site]?.label }
        // The ten posts, whole, and nothing of the stalled callout itself.
        let before = try #require(leadUp.sites.first { label($0.site) == "before" }, "\(leadUp)")
        #expect(before.count == 10)
        #expect(before.nanos >= 20_000_000 && before.nanos < 60_000_000, "\(before)")
        #expect(leadUp.busy >= before.nanos && leadUp.busy < 60_000_000, "\(leadUp)")
        #expect(leadUp.callouts >= 10)
        #expect(!leadUp.sites.contains { label($0.site) == "stall" })
        // The recording began about 150 ms before the stall: the window reaches back to it.
        #expect(leadUp.window >= 100_000_000 && leadUp.window <= 2_000_000_000, "\(leadUp.window)")
        #expect(leadUp.lost == 0)
        #expect(leadUp.recent.filter { label($0.site) == "before" }.count == 10, "\(leadUp.recent)")
        #expect(leadUp.recent.allSatisfy { $0.before >= $0.duration }, "\(leadUp.recent)")
        // Oldest first: each started before the next.
        #expect(zip(leadUp.recent, leadUp.recent.dropFirst()).allSatisfy { $0.before >= $1.before })
        // Full mode also has every callout as its own record; stalls mode none.
        #expect((trace.calloutCount > 0) == (mode == .full))
    }

    @Test func showListsWhatRanBeforeTheStall() async throws {
        let (trace, path) = try await recordLeadUp(mode: .stalls)
        defer { unlink(path) }
        let stall = try #require(trace.bareStalls.first { $0.callout.label == "stall" })
        let text = try runProduct(
            "stallwatch", ["show", path, "--stall", String(stall.id)], environment: ["COLUMNS": "100"])
        #expect(text.exitCode == 0, "\(text)")
        print(text.output)
        let lines = text.output.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("Before it (the last ") }, "\(text.output)")
        #expect(lines.contains { $0.contains("10  post \"before\" ") }, "\(text.output)")
        #expect(lines.filter { $0.contains("ms  post \"before\" ") }.count >= 10, "\(text.output)")
        #expect(lines.allSatisfy { $0.count <= 100 }, "\(text.output)")
        let json = try runProduct("stallwatch", ["show", path, "--stall", String(stall.id), "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        let leadUp = try #require(object["leadUp"] as? [String: Any], "\(json.output)")
        #expect((leadUp["callouts"] as? Int ?? 0) >= 10)
        let sites = try #require(leadUp["sites"] as? [[String: Any]])
        #expect(sites.contains { $0["label"] as? String == "before" && $0["callouts"] as? Int == 10 })
    }

    @Test func aZeroWindowKeepsNothing() async throws {
        let (trace, path) = try await recordLeadUp(mode: .stalls, flightWindow: .zero)
        defer { unlink(path) }
        #expect(trace.bareStalls.contains { $0.callout.label == "stall" })
        #expect(trace.leadUps.isEmpty)
        #expect(trace.congestedIterations.allSatisfy { $0.sites.isEmpty })
    }

    @Test func theWindowKeepsItsNewestCalloutsAndItsLength() {
        var window = FlightWindow(length: 1_000, capacity: 4)
        for index: UInt64 in 0..<6 { window.add(site: index, start: 10_000 + index * 100, duration: 50) }
        // Six added, four kept: sites 2 to 5. A stall at 10,600 sees them, newest last.
        let all = window.leadUp(id: 1, before: 10_600, since: 0)
        #expect(all.callouts == 4 && all.busy == 200)
        #expect(all.recent.map(\.site) == [2, 3, 4, 5])
        #expect(all.recent.map(\.before) == [400, 300, 200, 100])
        // Sites 0 and 1 ended inside the 1,000 ns but were overwritten: the window reaches back
        // only to the end of site 1 (10,150), not the whole length (it claimed 1,000 ns with
        // 648 of 1,500 callouts of a site in it).
        #expect(all.window == 450)
        #expect(window.leadUp(id: 1, before: 11_100, since: 0).window == 950)
        // Callouts that end after the stall's start are not before it.
        #expect(window.leadUp(id: 1, before: 10_420, since: 0).recent.map(\.site) == [2, 3])
        // Older than the window: only what ended in the last 1,000 ns.
        #expect(window.leadUp(id: 1, before: 11_360, since: 0).recent.map(\.site) == [4, 5])
        // A recording that began later shortens the window.
        #expect(window.leadUp(id: 1, before: 10_600, since: 10_350).window == 250)
        #expect(window.leadUp(id: 1, before: 10_600, since: 10_350).recent.map(\.site) == [3, 4, 5])
    }

    @Test func droppedEventsCountOnlyInsideTheWindow() {
        var window = FlightWindow(length: 1_000, capacity: 16)
        window.sawLost(total: 0, at: 100)
        window.sawLost(total: 7, at: 500)
        #expect(window.leadUp(id: 1, before: 900, since: 0).lost == 7)
        // Two seconds on, those drops are out of the window; three more are in it.
        window.sawLost(total: 7, at: 2_500)
        window.sawLost(total: 10, at: 2_600)
        #expect(window.leadUp(id: 1, before: 2_900, since: 0).lost == 3)
    }
}
