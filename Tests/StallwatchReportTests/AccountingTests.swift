// The time before a stall's first sample is accounted one way everywhere: the report's total,
// its per-category times, folded stacks, speedscope and the Chrome export all add up to the
// same milliseconds.
import Foundation
import StallwatchAnalysis
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct AccountingTests {
    let directory = TemporaryDirectory()

    func sums(_ bytes: [UInt8]) throws -> (
        report: Double, categories: Double, folded: Int, speedscope: Int, chrome: Double
    ) {
        let path = directory.write("trace.swtrace", bytes)
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["report", path, "--json"]).output.utf8))
                as? [String: Any])
        let stalls = try #require(report["stalls"] as? [String: Any])
        let total = try #require(stalls["totalMs"] as? Double)
        let categories =
            try #require(stalls["categoryMs"] as? [String: Double]).values.reduce(0, +)
            + (stalls["unsampledMs"] as? Double ?? -1)
        let folded = CLIRun(["export", path, "--format", "folded", "-o", "-"]).output.split(separator: "\n")
            .map { Int($0.split(separator: " ").last!)! }.reduce(0, +)
        let speedscopeText = CLIRun(["export", path, "--format", "speedscope", "-o", "-"]).output
        let speedscope = try #require(
            try JSONSerialization.jsonObject(with: Data(speedscopeText.utf8)) as? [String: Any])
        let profile = try #require((speedscope["profiles"] as? [[String: Any]])?.first)
        let weights = try #require(profile["weights"] as? [Int]).reduce(0, +)
        let chromeText = CLIRun(["export", path, "--format", "chrome", "-o", "-"]).output
        let chrome = try #require(try JSONSerialization.jsonObject(with: Data(chromeText.utf8)) as? [String: Any])
        let events = try #require(chrome["traceEvents"] as? [[String: Any]])
        // A stall's slice is drawn on its callout's clock (so slices nest); its exact duration is
        // in its args.
        let stallMillis = events.filter { $0["cat"] as? String == "stall" }
            .compactMap { ($0["args"] as? [String: Any])?["durationMs"] as? Double }.reduce(0, +)
        return (total, categories, folded, weights, stallMillis)
    }

    /// A stalls-mode trace of one stall from 2 s, `lasting` long, with samples at the given
    /// offsets from its start, in the given states, without frames; `looks` numbers the looks
    /// of samples taken of several threads at once (none: each sample a look of its own), and
    /// `tids` their threads (none: not known).
    func oneStall(
        lasting: UInt64, samples: [(offset: UInt64, state: ThreadState)], looks: [UInt32?] = [], tids: [Int32] = []
    ) -> [UInt8] {
        let start = 2_000 * Fixture.millisecond
        var builder = TraceBuilder()
        builder.add([
            .header(
                .init(
                    processName: "Accounting", pid: 1, wallClockStart: 0, clockBase: Fixture.clockBase,
                    mode: .stalls, thresholds: .default, sampleInterval: .milliseconds(5))),
            .callSite(.init(id: 1, kind: .post, file: "A/a.swift", line: 1)),
            .modeName(.init(id: 0, name: "default")),
            .stallBegan(.init(id: 1, start: start, site: 1, mode: 0, phase: .beforeSources, tier: .hitch)),
        ])
        for (index, sample) in samples.enumerated() {
            builder.add(
                .sample(
                    .init(
                        stall: 1, index: UInt64(index), tid: index < tids.count ? tids[index] : 0,
                        look: index < looks.count ? looks[index] : nil,
                        time: start + sample.offset, state: sample.state, cpuTime: 0, frames: [])))
        }
        builder.add(.stallEnded(.init(id: 1, end: start + lasting)))
        return builder.bytes
    }

    @Test func everyOutputAddsUpToTheReportTotal() throws {
        for bytes in [Fixture.standard(), Fixture.app()] {
            let sums = try sums(bytes)
            #expect(abs(sums.categories - sums.report) < 0.01, "\(sums)")
            #expect(abs(Double(sums.folded) / 1_000 - sums.report) < 0.01, "\(sums)")
            #expect(abs(Double(sums.speedscope) / 1_000 - sums.report) < 0.01, "\(sums)")
            #expect(abs(sums.chrome - sums.report) < 0.01, "\(sums)")
        }
        // The standard fixture's six stalls: 300 + 40 + 25 + 150 + 60 + 20 ms.
        #expect(try sums(Fixture.standard()).report == 595)
    }

    @Test func theFirstSampleStandsForTheTimeBeforeIt() {
        let stall = Stall(
            id: 1, start: 1_000, end: 41_000, tier: .hitch,
            callout: CalloutIdentity(kind: .post, file: "A/a.swift", line: 1, mode: "default", phase: .beforeSources),
            samples: [
                Sample(time: 17_000, frames: [], state: .running), Sample(time: 30_000, frames: [], state: .running),
            ])
        #expect(StallAccounting.sampleWeights(stall) == [29_000, 11_000])
        #expect(StallAccounting.duration(stall) == 40_000)
        let analyzed = AnalyzedStall(stall, tracePath: "t", budget: .milliseconds(16), classifier: Classifier())
        #expect(analyzed.breakdown.totalNanos == 40_000)
        #expect(analyzed.unsampledNanos == 0)
    }

    @Test func aSampleStampedAfterTheEndStandsForNothingPastIt() throws {
        // The watchdog's capture can finish as the callout ends: its sample is stamped after the
        // stall's end (seen on a loaded machine: weights 28 µs over the duration).
        let samples = [17_000, 30_000, 45_000].map { Sample(time: $0, frames: [], state: .running) }
        let stall = Stall(
            id: 1, start: 1_000, end: 41_000, tier: .hitch,
            callout: CalloutIdentity(kind: .post, file: "A/a.swift", line: 1, mode: "default", phase: .beforeSources),
            samples: samples)
        #expect(StallAccounting.sampleWeights(stall) == [29_000, 11_000, 0])
        let analyzed = AnalyzedStall(stall, tracePath: "t", budget: .milliseconds(16), classifier: Classifier())
        #expect(analyzed.breakdown.totalNanos == 40_000 && analyzed.unsampledNanos == 0)
        // The report's own path (the decoder's sample table) shares out the same 40 ms.
        let ms = Fixture.millisecond
        let bytes = oneStall(lasting: 40 * ms, samples: [17, 30, 45].map { ($0 * ms, .running) })
        let sums = try sums(bytes)
        #expect(sums.report == 40 && abs(sums.categories - 40) < 0.001, "\(sums)")
    }

    @Test func samplesOfSeveralThreadsAtOneLookShareItsTimeEqually() throws {
        // A pool starvation samples every pool thread at each look, all with the look's number
        // (at their own times, the same or not): none of them stands for more of the stall than
        // another.
        let looks: [[UInt64]] = [[11_000, 11_000], [21_000, 21_003, 21_005]]
        let samples = looks.enumerated().flatMap { look, times in
            times.map { Sample(time: $0, frames: [], state: .running, look: UInt32(look)) }
        }
        let stall = Stall(
            id: 1, start: 1_000, end: 31_000, tier: .hitch,
            callout: CalloutIdentity(kind: .post, file: "A/a.swift", line: 1, mode: "default", phase: .beforeSources),
            samples: samples)
        // 20 µs from the start to the second look, in two; the last 10 µs in three, the first
        // by a nanosecond more, so that the weights still add up to the duration.
        #expect(StallAccounting.sampleWeights(stall) == [10_000, 10_000, 3_334, 3_333, 3_333])
        // The report's own path (the decoder's sample table) shares them out the same way:
        // two threads at each look, one running and one asleep, half the time each.
        let ms = Fixture.millisecond
        let bytes = oneStall(
            lasting: 30 * ms,
            samples: [(10 * ms, .running), (10 * ms, .sleeping), (20 * ms, .running), (20 * ms + 3, .sleeping)],
            looks: [0, 0, 1, 1])
        let path = directory.write("pool.swtrace", bytes)
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["report", path, "--json"]).output.utf8))
                as? [String: Any])
        let categories = try #require((report["stalls"] as? [String: Any])?["categoryMs"] as? [String: Double])
        #expect(categories["compute"] == 15 && categories["other"] == 15, "\(categories)")
    }

    @Test func eachSampleOfAPoolStallNamesItsThread() throws {
        let ms = Fixture.millisecond
        let bytes = oneStall(
            lasting: 30 * ms,
            samples: [(10 * ms, .running), (10 * ms, .sleeping), (20 * ms, .running), (20 * ms + 3, .sleeping)],
            looks: [0, 0, 1, 1], tids: [4101, 4102, 4101, 4102])
        let path = directory.write("threads.swtrace", bytes)
        // `show`: a thread column, as the stall sampled two threads.
        let text = CLIRun(["show", path, "--stall", "1"]).output
        #expect(text.contains("thread"), "\(text)")
        #expect(text.split(separator: "\n").filter { $0.contains(" 4101 ") || $0.contains(" 4102 ") }.count == 4)
        // `show --json` and the JSON Lines export: each sample's `tid`.
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["show", path, "--stall", "1", "--json"]).output.utf8))
                as? [String: Any])
        let samples = try #require(json["samples"] as? [[String: Any]])
        #expect(samples.compactMap { $0["tid"] as? Int } == [4101, 4102, 4101, 4102])
        let output = directory.path + "/threads.jsonl"
        #expect(CLIRun(["export", path, "--format", "jsonl", "--samples", "-o", output]).exitCode == 0)
        let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n")
        let tids = try lines.compactMap { line -> Int? in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return object["type"] as? String == "sample" ? object["tid"] as? Int : nil
        }
        #expect(tids == [4101, 4102, 4101, 4102])
    }

    /// DuckDB reads the sample lines' `tid` as the fleet's queries would (docs/fleet.md).
    @Test(
        .disabled(if: Sanitizer.any, "checks a format with DuckDB, not memory"),
        .enabled(if: ExternalTools.hasDuckDB, "needs duckdb in the venv (scripts/install-deps.sh)"))
    func duckDBReadsEachSamplesThread() throws {
        let python = try #require(ExternalTools.python)
        let ms = Fixture.millisecond
        let bytes = oneStall(
            lasting: 30 * ms, samples: [(10 * ms, .running), (10 * ms, .sleeping)], looks: [0, 0],
            tids: [4101, 4102])
        let path = directory.write("duck-threads.swtrace", bytes)
        let output = directory.path + "/duck-threads.jsonl"
        #expect(CLIRun(["export", path, "--format", "jsonl", "--samples", "-o", output]).exitCode == 0)
        let query = directory.write(
            "tids.sql",
            Array("SELECT tid, typeof(tid) AS type FROM stalls WHERE type = 'sample' ORDER BY sample_index".utf8))
        let engine = ExternalTools.run(
            python, [ExternalTools.root + "/tools/fleet/duckdb_signatures.py", output, query])
        #expect(engine.status == 0, "\(engine.error)")
        let rows = try engine.output.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(rows.compactMap { $0["tid"] as? Int } == [4101, 4102], "\(rows)")
        #expect(rows.allSatisfy { ($0["type"] as? String)?.hasSuffix("INT") == true }, "\(rows)")
    }

    @Test func aStallOfSeveralThreadsSaysOnHowManyItsStackWas() throws {
        let blocker = [
            Frame(address: 0x5000, symbol: "usleep", module: "/usr/lib/x86_64-linux-gnu/libc.so.6"),
            Frame(address: 0x6000, symbol: "App.blockingWork() -> ()", module: "/srv/app/App"),
        ]
        let other = [Frame(address: 0x7000, symbol: "App.parse() -> ()", module: "/srv/app/App")]
        // Three looks at two threads: both blocked, one of them, both.
        let looks = [[blocker, blocker], [blocker, other], [blocker, blocker]]
        var samples: [Sample] = []
        for (look, stacks) in looks.enumerated() {
            for (thread, frames) in stacks.enumerated() {
                samples.append(
                    Sample(
                        time: UInt64(10_000 * (look + 1) + thread * 7), frames: frames, state: .sleeping,
                        look: UInt32(look)))
            }
        }
        let stall = Stall(
            id: 1, start: 1_000, end: 41_000, tier: .hitch,
            callout: CalloutIdentity(kind: .post, file: "A/a.swift", line: 1, mode: "default", phase: .beforeSources),
            samples: samples)
        let analyzed = AnalyzedStall(stall, tracePath: "t", budget: .milliseconds(16), classifier: Classifier())
        let spread = try #require(ThreadSpread(analyzed))
        #expect(spread.threads == 2 && spread.withStack == 2, "\(spread)")
        // One thread at each look: nothing to say.
        var single = stall
        single.samples = [samples[0], samples[2], samples[4]]
        #expect(
            ThreadSpread(AnalyzedStall(single, tracePath: "t", budget: .milliseconds(16), classifier: Classifier()))
                == nil)
    }

    @Test func aStallWithoutSamplesIsUnsampledTime() {
        let stall = Stall(
            id: 1, start: 1_000, end: 51_000, tier: .hitch,
            callout: CalloutIdentity(kind: .post, file: "A/a.swift", line: 1, mode: "default", phase: .beforeSources),
            samples: [])
        let analyzed = AnalyzedStall(stall, tracePath: "t", budget: .milliseconds(16), classifier: Classifier())
        #expect(analyzed.unsampledNanos == 50_000)
        #expect(analyzed.sampleWeights.isEmpty)
    }
}
