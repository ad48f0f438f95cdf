// `report` adds traces up (read in parallel), groups stalls into signatures by dominant category and app frames, and colours only on a terminal without NO_COLOR.
import Foundation
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct ReportTests {
    let directory = TemporaryDirectory()

    func report(_ traces: [[UInt8]]) -> StallReport {
        let paths = traces.enumerated().map { directory.write("t\($0.offset).swtrace", $0.element) }
        let loaded = TraceLoader.load(paths: paths).map { try! $0.get() }
        return ReportBuilder().report(loaded, top: 10)
    }

    @Test func signaturesGroupByCategoryAndAppFrames() {
        let report = report([Fixture.standard()])
        #expect(report.signatureCount == 4)
        #expect(report.signatures.map(\.category) == [.compute, .database, .io, .lockWait])
        let compute = report.signatures[0]
        #expect(compute.count == 2)
        #expect(compute.totalMs == 320)
        #expect(compute.maxMs == 300)
        #expect(compute.frames.first == "checksum(_:)")
        #expect(compute.stack.first?.symbol == "FixtureApp.checksum(Swift.Int) -> Swift.Int")
        #expect(compute.stackConfidence == 1)
        #expect(compute.site == "FixtureApp/Feed.swift:12")
        #expect(compute.example.stall == 1)
        #expect(report.signatures[2].stack.map(\.system) == [true, false, false])
    }

    @Test func severalTracesAddUp() {
        let one = report([Fixture.standard()])
        let three = report([Fixture.standard(), Fixture.standard(), Fixture.standard()])
        #expect(three.traces.count == 3)
        #expect(three.stalls.total == 3 * one.stalls.total)
        #expect(three.runTimeSeconds == 3 * one.runTimeSeconds)
        #expect(three.hitchRatioMsPerSecond == one.hitchRatioMsPerSecond)
        #expect(three.signatures.map(\.count) == one.signatures.map { 3 * $0.count })
        #expect(three.loopLatency?.count == 3 * (one.loopLatency?.count ?? 0))
    }

    @Test func utilisationNeedsFullMode() {
        #expect(report([Fixture.standard()]).loopUtilisation == nil)
        let full = report([Fixture.standard(mode: .full, withCallouts: true)])
        #expect(full.loopUtilisation == 0.0033)  // 10 callouts × 2 ms over 6 s
    }

    @Test func latencyPercentilesComeFromTheHistograms() throws {
        let latency = try #require(report([Fixture.standard()]).loopLatency)
        #expect(latency.count == 1_000)
        #expect(latency.p50Ms == 0.05)
        #expect(latency.p999Ms == 1.984)  // the 2 ms bucket's lower bound
        #expect(latency.maxMs == 294.912)
    }

    @Test func colourOnlyOnATerminalWithoutNoColor() {
        let path = directory.write("standard.swtrace", Fixture.standard())
        #expect(!CLIRun(["report", path]).output.contains("\u{1B}["))
        #expect(CLIRun(["report", path], terminal: true).output.contains("\u{1B}[1m"))
        #expect(!CLIRun(["report", path], environment: ["NO_COLOR": "1"], terminal: true).output.contains("\u{1B}["))
    }

    @Test func topLimitsTheSignatures() {
        let path = directory.write("standard.swtrace", Fixture.standard())
        let run = CLIRun(["report", path, "--top", "1"])
        #expect(run.exitCode == 0)
        #expect(run.output.contains("Top signatures (1 of 4, by total time)"))
        #expect(!run.output.contains("2. "))
    }

    @Test func showPrintsTheTimeline() {
        // From standard input, so the title's length does not depend on the temporary path.
        let run = CLIRun(["show", "-", "--stall", "5"], input: Fixture.standard())
        #expect(run.exitCode == 0)
        #expect(
            run.output == """
                Stall 5 — hitch, 60.0 ms (unfinished) in -
                  callout   post posted at FixtureApp/Cache.swift:5, mode default, phase beforeSources
                  category  lockWait: lockWait 100 %
                  reasons   pthread_mutex_lock 100 %
                  signature lockWait: Cache.lookup() ← main()

                Samples (2; time from the callout's start)
                       time  state       syscall     category  reason              stack   top frames
                   +17.0 ms  S sleeping  futex       lockWait  pthread_mutex_lock  signal  pthread_mutex_lock ← …
                   +60.0 ms  S sleeping  futex       lockWait  pthread_mutex_lock  scan    pthread_mutex_lock ← …

                Representative stack (sample 1, innermost first): 100 % of the stall's time, 2 of 2 samples
                  pthread_mutex_lock  libc.so.6
                  Cache.lookup() (FixtureApp/Cache.swift:19)  FixtureApp
                  main() (FixtureApp/main.swift:10)  FixtureApp

                """)
    }

    @Test func diffSortsSignaturesIntoNewGoneWorseBetter() throws {
        let base = directory.write("base.swtrace", Fixture.hitches(count: 5, duration: 40_000_000))
        let same = directory.write("same.swtrace", Fixture.hitches(count: 5, duration: 41_000_000))
        let worse = directory.write("worse.swtrace", Fixture.hitches(count: 8, duration: 40_000_000))
        let other = directory.write("other.swtrace", Fixture.standard())
        func diff(_ a: String, _ b: String) throws -> [String: Any] {
            let run = CLIRun(["diff", a, b, "--json"])
            #expect(run.exitCode == 0)
            return try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        }
        func count(_ json: [String: Any], _ key: String) -> Int { (json[key] as? [Any])?.count ?? -1 }
        let unchanged = try diff(base, same)
        #expect(count(unchanged, "unchanged") == 1)
        let grew = try diff(base, worse)
        #expect(count(grew, "worse") == 1)
        let shrank = try diff(worse, base)
        #expect(count(shrank, "better") == 1)
        let replaced = try diff(base, other)
        #expect(count(replaced, "added") == 4)
        #expect(count(replaced, "gone") == 1)
        let text = CLIRun(["diff", base, worse]).output
        #expect(text.contains("Worse (1)\n  ▲ compute: work()  5 → 8 stalls, 200.0 → 320.0 ms (+60.0 %)"))
    }
}
