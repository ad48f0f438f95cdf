// The hang rate is the seconds of stalls of tier hang or severe per hour of run time (the hitch
// ratio's run time), in the report's text, JSON and page, per build and host in a fleet, and a
// gate limit; the hitch ratio is graded as Apple does (under 5 ms/s good, 5 to 10 warning, over
// 10 bad).
import Foundation
import StallwatchCLITestSupport
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct HangRateTests {
    let directory = TemporaryDirectory()
    var standard: String { directory.write("standard.swtrace", Fixture.standard()) }

    @Test func theHitchRatioIsGradedByApplesBands() {
        #expect(HitchGrade(msPerSecond: 0) == .good)
        #expect(HitchGrade(msPerSecond: 4.999) == .good)
        #expect(HitchGrade(msPerSecond: 5) == .warning)
        #expect(HitchGrade(msPerSecond: 10) == .warning)
        #expect(HitchGrade(msPerSecond: 10.001) == .bad)
    }

    @Test func hangTimePerHourOfRunTime() {
        let second: UInt64 = 1_000_000_000
        #expect(RunRates(runNanos: 6 * second, hangNanos: 300_000_000).hangRateSecondsPerHour == 180)
        #expect(RunRates(runNanos: 3600 * second, hangNanos: 2 * second).hangRateSecondsPerHour == 2)
        #expect(RunRates(runNanos: 0, hangNanos: second).hangRateSecondsPerHour == 0)
        #expect(RunRates(runNanos: second, overrunNanos: 5_000_000).hitchRatioMsPerSecond == 5)
    }

    /// The standard trace: 6 s of run time, one 300 ms hang among six stalls (82.5 ms/s of hitches).
    @Test func reportTextAndJSONGiveTheRateAndGrade() throws {
        let text = CLIRun(["report", standard])
        #expect(text.exitCode == 0)
        #expect(text.output.contains("  hitch ratio       82.5 ms/s (bad: over 10 ms/s)\n"))
        #expect(text.output.contains("  hang rate         180.0 s/h (1 hang, 300.0 ms)\n"))
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["report", standard, "--json"]).output.utf8))
                as? [String: Any])
        #expect(json["hangRateSecondsPerHour"] as? Double == 180)
        #expect(json["hitchGrade"] as? String == "bad")
        #expect((json["stalls"] as? [String: Any])?["hangMs"] as? Double == 300)
    }

    @Test func hitchesAreNoHangTime() throws {
        // 5 hitches of 40 ms in 10 s: 116.7 ms of overrun, 11.7 ms/s, no hang.
        let path = directory.write("hitches.swtrace", Fixture.hitches(count: 5, duration: 40_000_000))
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["report", path, "--json"]).output.utf8))
                as? [String: Any])
        #expect(report["hangRateSecondsPerHour"] as? Double == 0)
        #expect(report["hitchGrade"] as? String == "bad")
        let gate = CLIRun(["gate", path, "--max-hang-rate", "0"])
        #expect(gate.exitCode == 0, "\(gate.output)")
    }

    @Test func theGateFailsAboveTheLimitAndPassesAtIt() {
        let above = CLIRun(["gate", standard, "--max-hang-rate", "179.9"])
        #expect(above.exitCode == 1)
        #expect(above.output.contains("  FAIL  hang-rate  180.000 s/h (limit 179.900 s/h)\n"), "\(above.output)")
        let within = CLIRun(["gate", standard, "--max-hang-rate", "180"])
        #expect(within.exitCode == 0)
        #expect(within.output.contains("  PASS  hang-rate  180.000 s/h (limit 180.000 s/h)\n"), "\(within.output)")
    }

    /// Build 1.0 on h1: a 300 ms hang in 1.3 s; build 1.1 on h2: a 50 ms hitch and a 500 ms hang
    /// in 2.55 s (each run ends with its last stall, a second after the one before).
    func fleet() throws -> String {
        try FileManager.default.createDirectory(atPath: directory.path + "/rates", withIntermediateDirectories: true)
        _ = directory.write(
            "rates/a.swtrace",
            FleetFixture.trace(host: "h1", version: "1.0", buildByte: 0xaa, offset: 0, stalls: [(.parse, 300)]))
        _ = directory.write(
            "rates/b.swtrace",
            FleetFixture.trace(
                host: "h2", version: "1.1", buildByte: 0xbb, offset: 60, stalls: [(.parse, 50), (.save, 500)]))
        return directory.path + "/rates"
    }

    @Test func aFleetGivesEachBuildAndHostItsRate() throws {
        let root = try fleet()
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["report", root, "--json"]).output.utf8))
                as? [String: Any])
        // 0.8 s of hang in 3.85 s.
        #expect(json["hangRateSecondsPerHour"] as? Double == 748.052)
        let builds = try #require(json["rateByBuild"] as? [[String: Any]])
        #expect(builds.map { $0["name"] as? String } == ["1.0 (aaaaaaaa)", "1.1 (bbbbbbbb)"])
        #expect(builds.map { $0["hangRateSecondsPerHour"] as? Double } == [830.769, 705.882])
        #expect(builds.map { $0["hangSeconds"] as? Double } == [0.3, 0.5])
        #expect(builds.map { $0["runTimeSeconds"] as? Double } == [1.3, 2.55])
        let hosts = try #require(json["rateByHost"] as? [[String: Any]])
        #expect(hosts.map { $0["name"] as? String } == ["h1", "h2"])
        #expect(hosts.map { $0["hangRateSecondsPerHour"] as? Double } == [830.769, 705.882])
        let text = CLIRun(["report", root]).output
        #expect(text.contains("  hang rate by build: 1.0 (aaaaaaaa) 830.8 s/h, 1.1 (bbbbbbbb) 705.9 s/h\n"), "\(text)")
        #expect(text.contains("  hang rate by host: h1 830.8 s/h, h2 705.9 s/h\n"), "\(text)")
    }

    @Test func thePageShowsTheRate() throws {
        let page = directory.path + "/rate.html"
        let run = CLIRun(["report", standard, "--html", page])
        #expect(run.exitCode == 0)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("\"hangRateSecondsPerHour\":180"))
        #expect(html.contains("\"hitchGrade\":\"bad: over 10 ms/s\""))
        #expect(html.contains("figure('hang rate'"))
    }
}
