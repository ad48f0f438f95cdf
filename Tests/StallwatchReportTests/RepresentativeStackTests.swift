// A stall's representative stack is the dominant group of its samples' stacks, grouped by
// function names (not addresses), weighed by time; its share is the confidence, and report,
// show and the Chrome export all show that same stack.
import Foundation
import StallwatchAnalysis
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct RepresentativeStackTests {
    let app = "/opt/app/App"
    let ms: UInt64 = 1_000_000

    func frame(_ name: String, _ address: UInt64) -> Frame {
        Frame(address: address, symbol: name, module: app)
    }

    /// A compute stall from 0 to `end` ms with samples at `offsets` (ms), each with `stack`.
    func stall(end: UInt64, samples: [(offset: UInt64, stack: [Frame])]) -> AnalyzedStall {
        let stall = Stall(
            id: 1, start: 0, end: end * ms, tier: .hitch,
            callout: CalloutIdentity(
                kind: .post, file: "App/main.swift", line: 1, mode: "default", phase: .beforeSources),
            samples: samples.map { Sample(time: $0.offset * ms, frames: $0.stack, state: .running) })
        return AnalyzedStall(stall, tracePath: "t", budget: .milliseconds(16), classifier: Classifier())
    }

    @Test func samplesAtOtherAddressesOfTheSameFunctionsAreOneGroup() throws {
        // 6 samples in parse ← load at six different addresses, 4 in render ← load.
        var samples: [(UInt64, [Frame])] = []
        for index in 0..<10 {
            let offset = UInt64(16 + index * 10)
            let leaf = index < 6 ? frame("App.parse()", 0x1000 + UInt64(index)) : frame("App.render()", 0x2000)
            samples.append((offset, [leaf, frame("App.load()", 0x3000 + UInt64(index))]))
        }
        let analyzed = stall(end: 116, samples: samples)
        let representative = try #require(analyzed.representative)
        #expect(representative.samples == 6)
        // parse's samples stand for 16 (the lead before the first) + 6 × 10 ms of 116 ms.
        #expect(representative.confidence == round(76.0 / 116.0 * 10_000) / 10_000)
        #expect(representative.sample == 0)
        #expect(analyzed.key.frames == ["parse()", "load()"])
    }

    @Test func theGroupWithTheMostTimeWinsOverTheMostSamples() throws {
        // Three quick samples in a(), then one in b() that lasts until the end.
        let a = [frame("App.a()", 0x10), frame("App.main()", 0x90)]
        let b = [frame("App.b()", 0x20), frame("App.main()", 0x90)]
        let analyzed = stall(end: 200, samples: [(17, a), (18, a), (19, a), (20, b)])
        let representative = try #require(analyzed.representative)
        #expect(representative.sample == 3)
        #expect(representative.samples == 1)
        #expect(representative.confidence == 0.9)  // 180 of 200 ms
        #expect(analyzed.key.frames == ["b()", "main()"])
    }

    @Test func compilerGlueAndRecursionDoNotSplitGroups() {
        let plain = [frame("App.work()", 0x10), frame("App.main()", 0x90)]
        let glued = [
            frame("App.work()", 0x11), frame("partial apply forwarder for App.work()", 0x50),
            frame("App.main()", 0x91), frame("App.main()", 0x92),
        ]
        #expect(RepresentativeStack.groupKey(plain) == RepresentativeStack.groupKey(glued))
        let analyzed = stall(end: 60, samples: [(17, plain), (30, glued)])
        #expect(analyzed.representative?.confidence == 1)
    }

    @Test func memosKeptAcrossStallsAndTracesChangeNoAnalysis() {
        // Two traces of the same functions at other addresses, each stall analysed with the
        // worker's memo (verdicts by portable sample, names by symbol) and alone: the same
        // verdicts, representative stacks and signatures.
        let portable = PortableMemo()
        let classifier = Classifier()
        for base: UInt64 in [0x1000, 0x9000] {
            let parse = [frame("App.parse()", base), frame("App.load()", base + 0x100)]
            let write = [
                Frame(address: base + 0x200, symbol: "fsync", module: "/usr/lib/x86_64-linux-gnu/libc.so.6"),
                frame("App.save()", base + 0x300),
            ]
            let copy = parse.map { $0 }  // equal frames in their own storage
            let shapes: [[(UInt64, [Frame], ThreadState)]] = [
                [(17, parse, .running), (27, parse, .running), (37, write, .diskSleep)],
                [(17, write, .diskSleep), (27, copy, .running), (37, write, .diskSleep), (47, parse, .running)],
                [(17, copy, .running)],
            ]
            for (id, shape) in shapes.enumerated() {
                let stall = Stall(
                    id: UInt64(id), start: 0, end: 60 * ms, tier: .hitch,
                    callout: CalloutIdentity(
                        kind: .post, file: "App/main.swift", line: 1, mode: "default", phase: .beforeSources),
                    samples: shape.map {
                        Sample(time: $0.0 * ms, frames: $0.1, state: $0.2, syscall: $0.2 == .diskSleep ? 74 : nil)
                    })
                let table = SampleTable(stall)
                var state = TableReading(table)
                let shared = AnalyzedStall(
                    slot: 0, of: table, stall: stall, tracePath: "t", budget: .milliseconds(16),
                    classifier: classifier, names: FrameNamer(modules: []), memo: AppFrameMemo(portable: portable),
                    state: &state)
                let alone = AnalyzedStall(stall, tracePath: "t", budget: .milliseconds(16), classifier: Classifier())
                #expect(shared.classifications == alone.classifications)
                #expect(shared.representative == alone.representative)
                #expect(shared.key == alone.key)
                #expect(shared.breakdown == alone.breakdown)
            }
        }
    }

    @Test func noStackNoRepresentative() {
        let analyzed = stall(end: 40, samples: [(17, []), (30, [])])
        #expect(analyzed.representative == nil)
        #expect(analyzed.representativeFrames.isEmpty)
        #expect(analyzed.key.frames == ["[running]"])
    }

    @Test func reportShowAndChromeShowTheSameStack() throws {
        let directory = TemporaryDirectory()
        let path = directory.write("app.swtrace", Fixture.app())
        let loaded = try TraceLoader.load(path: path).get()
        let analyzed = ReportBuilder().analyze([loaded])[0][0]
        let representative = try #require(analyzed.representative)
        // fnv1a's three samples: 200 of the stall's 240 ms.
        #expect(representative.confidence == 0.8333)
        #expect(representative.samples == 3)
        let expected = analyzed.representativeFrames.map(analyzed.frameName)
        #expect(expected.first == "fnv1a(_:seed:)")

        let report = ReportBuilder().report([loaded], top: 5)
        let signature = try #require(report.signatures.first)
        #expect(signature.stack.map(\.name) == expected)
        #expect(signature.stackConfidence == 0.8333)
        #expect(CLIRun(["report", path]).output.contains("stack (83 % of the longest stall's time had this stack):"))

        let show = CLIRun(["show", path, "--stall", "1", "--wide"]).output
        #expect(
            show.contains("Representative stack (sample 1, innermost first): 83 % of the stall's time, 3 of 4 samples"))
        let shown = show.components(separatedBy: "innermost first)")[1].split(separator: "\n").dropFirst()
            .map { $0.trimmingCharacters(in: .whitespaces).components(separatedBy: " (")[0] }
            .map { $0.components(separatedBy: "  ")[0] }
        #expect(shown == expected)

        let chrome = CLIRun(["export", path, "--format", "chrome", "-o", "-"]).output
        let json = try #require(try JSONSerialization.jsonObject(with: Data(chrome.utf8)) as? [String: Any])
        let events = try #require(json["traceEvents"] as? [[String: Any]])
        let stall = try #require(events.first { $0["cat"] as? String == "stall" })
        let args = try #require(stall["args"] as? [String: Any])
        #expect(args["representativeStack"] as? String == expected.joined(separator: "\n"))
        #expect(args["stackConfidence"] as? Double == 0.8333)

        let detail = CLIRun(["show", path, "--stall", "1", "--json"]).output
        let object = try #require(try JSONSerialization.jsonObject(with: Data(detail.utf8)) as? [String: Any])
        #expect(object["representativeSample"] as? Int == 0)
        #expect((object["stack"] as? [[String: Any]])?.map { $0["name"] as? String } == expected)
    }
}
