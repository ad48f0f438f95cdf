// The Chrome export of a real trace nests exactly on the main thread's track (each stall inside
// its callout, each sample inside its stall), an unfinished stall has a visible extent, and a
// sample whose capture timed out says so.
import Foundation
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

/// The test host (a built product beside the test bundle, which owns its main thread) running
/// `scenario` with `environment` added.
func startTestHost(_ scenario: String, environment: [String: String]) throws -> StartedChild {
    try StartedChild(
        BinaryRun.productDirectory + "/StallwatchTestHost", [scenario],
        environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
}

@Suite(.serialized) struct ChromeNestingTests {
    let directory = TemporaryDirectory()

    func chrome(_ trace: String) throws -> TraceEventChecker {
        let output = directory.path + "/out.json"
        let run = CLIRun(["export", trace, "--format", "chrome", "-o", output])
        #expect(run.exitCode == 0, "\(run.error)")
        let data = try #require(FileManager.default.contents(atPath: output))
        return TraceEventChecker(json: try JSONSerialization.jsonObject(with: data))
    }

    @Test func aRealFullModeTraceNestsExactly() throws {
        let trace = directory.path + "/full.swtrace"
        let host = try startTestHost("exports", environment: ["STALLWATCH_TRACE": trace, "STALLWATCH_MODE": "full"])
        let run = host.finish()
        #expect(run.exitCode == 0 && run.output.contains("returned=1"), "\(run.output)\n\(run)")
        let decoded = try #require(try? TraceLoader.load(path: trace, includeCallouts: true).get())
        let checker = try chrome(trace)
        #expect(checker.problems.isEmpty, "\(checker.problems.joined(separator: "\n"))")
        #expect(checker.tracks.count == 1)
        let track = try #require(checker.tracks.values.first)

        let callouts = track.filter { $0.category == "callout" }
        let stalls = track.filter { $0.category == "stall" }
        let samples = track.filter { $0.category == "sample" }
        #expect(callouts.count == decoded.callouts.count && callouts.count >= 250, "\(callouts.count)")
        // spin, sleep, the timer's spin and the nested run's inner spin (more if the machine hitched;
        // one fewer was seen once on a machine loaded by seven builds).
        #expect(stalls.count == decoded.trace.stalls.count && stalls.count >= 3, "\(stalls.map(\.name))")
        #expect(samples.count == decoded.trace.stalls.reduce(0) { $0 + $1.samples.count })
        // The CLI reads the callouts from the file as it draws them: the same track as from
        // the loaded callouts.
        let analyzed = ReportBuilder().analyze([decoded])[0]
        let bytes = try TraceLoader.readFile(trace).get()
        var withoutCallouts = decoded
        withoutCallouts.callouts = []
        var streamed = ""
        ChromeTraceExporter.write(withoutCallouts, stalls: analyzed, records: bytes, to: &streamed)
        #expect(streamed == ChromeTraceExporter.export(decoded, stalls: analyzed))

        // Every stall lies in a callout of its own site; every sample in its own stall.
        for stall in stalls {
            let callout = try #require(stall.enclosing.last, "\(stall.name) has no callout around it")
            #expect(callout.category == "callout")
            #expect(
                callout.args["site"] as? String == stall.args["site"] as? String, "\(stall.name) in \(callout.name)")
            // Drawn on the callout's clock: it starts with it.
            #expect(stall.start == callout.start)
            let exact = try #require(stall.args["durationMs"] as? Double)
            #expect(abs(Double(stall.end - stall.start) / 1e6 - exact) < 1, "\(stall.name)")
        }
        for sample in samples {
            let stall = try #require(sample.enclosing.last)
            #expect(stall.category == "stall")
            #expect(stall.args["id"] as? Int == sample.args["stall"] as? Int)
        }
        // The nested run's inner stall lies in two callouts: the timer that ran the loop again
        // and the inner post.
        let inner = try #require(stalls.first { $0.args["label"] as? String == "inner spin" })
        #expect(inner.enclosing.map(\.category) == ["callout", "callout"], "\(inner.enclosing.map(\.name))")
    }

    @Test func aHangKilledMidwayIsDrawnToTheTracesEnd() throws {
        let trace = directory.path + "/killed.swtrace"
        let host = try startTestHost("hang", environment: ["STALLWATCH_TRACE": trace, "STALLWATCH_MODE": "full"])
        // "hanging" is printed as the hang starts; kill 400 ms into it.
        let printed = host.read(until: "hanging")
        usleep(400_000)
        kill(host.process.processIdentifier, SIGKILL)
        let run = host.finish()
        #expect(host.process.terminationReason == .uncaughtSignal, "\(printed)\(run.output)\n\(run)")

        let loaded = try #require(try? TraceLoader.load(path: trace, includeCallouts: true).get())
        let hang = try #require(loaded.trace.stalls.first)
        // Unfinished is the flag (the decoder gives the stall the end every output draws).
        #expect(hang.flags.contains(.unfinished))
        let lastSample = try #require(hang.samples.last, "the hang was sampled before the kill")
        let checker = try chrome(trace)
        #expect(checker.problems.isEmpty, "\(checker.problems.joined(separator: "\n"))")
        let stall = try #require(checker.tracks.values.first?.first { $0.category == "stall" })
        #expect(stall.name.hasSuffix("(unfinished)"))
        #expect(stall.args["unfinished"] as? Bool == true)
        // Visible: it reaches its last sample and the trace's last timestamp, and lasts at
        // least its budget (the watchdog saw it running then).
        let origin = Int64(min(loaded.trace.header!.clockBase, hang.start))
        let budget = try #require(ReportBuilder().analyze([loaded])[0].first).budgetNanos
        #expect(stall.end >= Int64(lastSample.time) - origin)
        #expect(stall.end == Int64(max(loaded.lastTimestamp, hang.start + budget)) - origin)
        #expect(stall.end - stall.start >= Int64(budget), "\(stall.end - stall.start) ns")
    }

    @Test func anUnfinishedStallWithoutSamplesHasAnExtent() throws {
        let trace = directory.write("unfinished.swtrace", Fixture.unfinishedWithoutSamples())
        let checker = try chrome(trace)
        #expect(checker.problems.isEmpty, "\(checker.problems)")
        let stalls = try #require(checker.tracks.values.first).filter { $0.category == "stall" }
        #expect(stalls.count == 2)
        let unfinished = try #require(stalls.first { $0.args["unfinished"] as? Bool == true })
        // From 2 s to the trace's last record (the frame clock's interval ends at 4 s).
        #expect(unfinished.start == 2_000_000_000)
        #expect(unfinished.end == 4_000_000_000)
        // 2 s known to run: severe, in the chrome export as in every other output.
        #expect(unfinished.name == "severe other: Hung/main.swift:9 (unfinished)")
        #expect(
            unfinished.args["extent"] as? String
                == "drawn until the last time the trace says it ran (the stall never ended)")
    }

    @Test func aSampleWhoseCaptureTimedOutSaysSo() throws {
        let trace = directory.write("unfinished.swtrace", Fixture.unfinishedWithoutSamples())
        let output = directory.path + "/out.json"
        #expect(CLIRun(["export", trace, "--format", "chrome", "-o", output]).exitCode == 0)
        let data = try #require(FileManager.default.contents(atPath: output))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let events = try #require(json["traceEvents"] as? [[String: Any]])
        let sample = try #require(events.first { $0["cat"] as? String == "sample" })
        #expect(sample["name"] as? String == "fsync (capture timed out)")
        let args = try #require(sample["args"] as? [String: Any])
        #expect(args["captureTimedOut"] as? Bool == true)
        #expect(args["stack"] as? String == "[capture timed out]")
        let frames = try #require(json["stackFrames"] as? [String: [String: Any]])
        #expect(frames[String(describing: sample["sf"]!)]?["name"] as? String == "[capture timed out]")
        #expect(
            (json["otherData"] as? [String: Any])?["exporter"] as? String == "stallwatch \(StallwatchVersion.current)")
    }

    @Test func theLayoutNestsSlicesThatTwoClocksLeftOverlapping() {
        typealias Slice = ChromeTrack.Slice
        // A callout that starts 3 ns before the previous one ends becomes its sibling.
        let siblings = ChromeTrack.nest([
            Slice(start: 0, end: 100, layer: 0, item: 0), Slice(start: 97, end: 200, layer: 0, item: 1),
        ])
        #expect(siblings.map { [$0.start, $0.end] } == [[0, 100], [100, 200]])
        // A stalled callout (and its stall, drawn on its clock) that both start inside the
        // previous callout move out together, the stall still inside its callout.
        let moved = ChromeTrack.nest([
            Slice(start: 0, end: 100, layer: 0, item: 0), Slice(start: 95, end: 300, layer: 0, item: 1),
            Slice(start: 95, end: 290, layer: 1, item: 0),
        ])
        #expect(moved.map { [$0.start, $0.end, UInt64($0.layer)] } == [[0, 100, 0], [100, 300, 0], [100, 290, 1]])
        // Whatever the input, the output nests (a seeded random track of 2,000 slices).
        var random = SeededNumbers(seed: 42)
        var slices: [Slice] = []
        for item in 0..<2_000 {
            let start = random.next() % 100_000
            slices.append(
                Slice(start: start, end: start + random.next() % 5_000, layer: Int(random.next() % 2), item: item))
        }
        let laidOut = ChromeTrack.nest(slices)
        #expect(laidOut.count == slices.count)
        #expect(Set(laidOut.map(\.item)) == Set(0..<2_000))
        var open: [Slice] = []
        var breaches = 0
        for slice in laidOut {
            while let top = open.last, top.end <= slice.start { open.removeLast() }
            if let top = open.last, slice.end > top.end { breaches += 1 }
            open.append(slice)
        }
        #expect(breaches == 0)
        // Nothing moved further than it had to: every end is kept.
        let ends = Dictionary(uniqueKeysWithValues: slices.map { ($0.item, $0.end) })
        #expect(laidOut.allSatisfy { $0.end == ends[$0.item] })
    }
}

/// A small deterministic generator for the layout's property test (Knuth's MMIX LCG).
struct SeededNumbers {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 29
    }
}

extension Fixture {
    /// A finished compute hitch whose one sample's capture timed out (a thread in state D),
    /// then a stall that never ended and has no samples, then a frame-clock summary that ends
    /// at 4 s: the trace's last record.
    static func unfinishedWithoutSamples() -> [UInt8] {
        var builder = TraceBuilder()
        builder.add([
            .header(
                .init(
                    processName: "Hung", pid: 99, wallClockStart: 0, clockBase: clockBase, mode: .stalls,
                    thresholds: .default, sampleInterval: .milliseconds(5))),
            .callSite(.init(id: 1, kind: .post, file: "Hung/main.swift", line: 4)),
            .callSite(.init(id: 2, kind: .post, file: "Hung/main.swift", line: 9)),
            .modeName(.init(id: 0, name: "default")),
            .stallBegan(
                .init(
                    id: 1, start: clockBase + 500 * millisecond, site: 1, mode: 0, phase: .beforeSources, tier: .hitch)),
            .sample(
                .init(
                    stall: 1, index: 0, time: clockBase + 517 * millisecond, state: .diskSleep, syscall: fsync,
                    captureTimedOut: true)),
            .stallEnded(.init(id: 1, end: clockBase + 540 * millisecond)),
            .stallBegan(
                .init(id: 2, start: clockBase + 2 * second, site: 2, mode: 0, phase: .beforeSources, tier: .hitch)),
            .frameClock(
                .init(intervalStart: clockBase, intervalLength: 4 * second, expected: 240, delivered: 200, dropped: 40)),
        ])
        return builder.bytes
    }
}
