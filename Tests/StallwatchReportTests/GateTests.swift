// `gate` exits 0 when every limit holds and 1 when any fails (each kind of limit, and the baseline regression), and writes one JUnit testcase per limit.
import Foundation
import StallwatchCLITestSupport
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

#if canImport(FoundationXML)
    import FoundationXML
#endif

@Suite struct GateTests {
    let directory = TemporaryDirectory()
    var standard: String { directory.write("standard.swtrace", Fixture.standard()) }

    @Test func passesWithinEveryLimit() {
        let run = CLIRun([
            "gate", standard, "--max-stalls", "6", "--max-hangs", "1", "--max-hitch-ratio", "82.5", "--max",
            "compute=2",
            "--max", "lockWait=1",
        ])
        #expect(run.exitCode == 0)
        #expect(
            run.output == """
                Gate: 1 trace, 6 stalls, 6.00 s
                  PASS  stalls             6 (limit 6)
                  PASS  hangs              1 (limit 1)
                  PASS  hitch-ratio        82.500 ms/s (limit 82.500 ms/s)
                  PASS  category-compute   2 (limit 2)
                  PASS  category-lockWait  1 (limit 1)
                Result: PASS (5 limits)

                """)
    }

    @Test(arguments: [
        (["--max-stalls", "5"], "stalls"),
        (["--max-hangs", "0"], "hangs"),
        (["--max-hitch-ratio", "82.4"], "hitch-ratio"),
        (["--max", "database=0"], "category-database"),
    ])
    func failsOnEachKindOfLimit(limit: [String], name: String) {
        let run = CLIRun(["gate", standard] + limit)
        #expect(run.exitCode == 1)
        #expect(run.output.contains("FAIL  \(name)"))
        #expect(run.output.hasSuffix("Result: FAIL (1 of 1 limit exceeded)\n"))
    }

    @Test func regressionAgainstBaseline() {
        let base = directory.write("base.swtrace", Fixture.hitches(count: 5, duration: 40_000_000))
        let slightlyWorse = directory.write("worse.swtrace", Fixture.hitches(count: 5, duration: 42_000_000))
        let muchWorse = directory.write("much.swtrace", Fixture.hitches(count: 10, duration: 40_000_000))
        let within = CLIRun(["gate", slightlyWorse, "--baseline", base, "--max-regression", "10"])
        #expect(within.exitCode == 0)
        #expect(within.output.contains("PASS  regression-hitch-ratio  +8.6 % (11.667 → 12.667 ms/s) (limit +10.0 %)"))
        let beyond = CLIRun(["gate", muchWorse, "--baseline", base, "--max-regression", "10"])
        #expect(beyond.exitCode == 1)
        #expect(beyond.output.contains("FAIL  regression-hitch-ratio  +100.0 %"))
        let better = CLIRun(["gate", base, "--baseline", muchWorse, "--max-regression", "0"])
        #expect(better.exitCode == 0)
    }

    @Test func usageMistakesExit2() {
        #expect(CLIRun(["gate", standard]).exitCode == 2)
        #expect(CLIRun(["gate", standard, "--baseline", standard]).exitCode == 2)
        let badCategory = CLIRun(["gate", standard, "--max", "gpu=1"])
        #expect(badCategory.exitCode == 2)
        #expect(badCategory.error.hasPrefix("Error: The value 'gpu=1' is invalid for '--max'"))
    }

    @Test func junitHasOneTestcasePerLimitAndFailuresForFailedOnes() throws {
        let junit = directory.path + "/gate.xml"
        let run = CLIRun([
            "gate", standard, "--max-stalls", "10", "--max-hangs", "0", "--max", "io=0", "--junit", junit,
        ])
        #expect(run.exitCode == 1)
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #if canImport(FoundationXML) || os(macOS)
            let document = try XMLDocument(xmlString: xml)
            let suite = try #require(document.rootElement())
            #expect(suite.name == "testsuite")
            #expect(suite.attribute(forName: "tests")?.stringValue == "3")
            #expect(suite.attribute(forName: "failures")?.stringValue == "2")
            let cases = suite.elements(forName: "testcase")
            #expect(cases.map { $0.attribute(forName: "name")?.stringValue } == ["stalls", "hangs", "category-io"])
            #expect(cases.map { $0.elements(forName: "failure").count } == [0, 1, 1])
            #expect(
                cases[1].elements(forName: "failure")[0].attribute(forName: "message")?.stringValue == "hangs: 1 > 0")
        #else
            #expect(xml.contains("<testsuite name=\"stallwatch gate\" tests=\"3\" failures=\"2\""))
        #endif
    }

    @Test func junitEscapesText() {
        let run = JUnitRun(timestamp: "2026-01-01T00:00:00", hostname: "ci", seconds: 0, standardOutput: "x < y\n")
        let xml = Gate.junit([GateCheck(name: "a<b", measured: "1 & 2", limit: "\"0\"", passed: false)], run: run)
        #expect(xml.contains("name=\"a&lt;b\""))
        #expect(xml.contains("measured 1 &amp; 2, limit &quot;0&quot;"))
        #expect(xml.contains("<system-out>x &lt; y\n</system-out>"))
        #expect(Gate.escape("a\nb\u{1}") == "a&#10;b?")
    }
}
