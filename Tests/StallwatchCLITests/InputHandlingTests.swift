// `-` reads a trace from standard input; a file named twice is counted once, with a warning;
// `export -o -` writes the same bytes to stdout as to a file; `show` lists, and speaks JSON.
import Foundation
import StallwatchCLITestSupport
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct InputHandlingTests {
    let directory = TemporaryDirectory()

    @Test func dashReadsStandardInput() {
        let path = directory.write("standard.swtrace", Fixture.standard())
        let fromFile = CLIRun(["report", path, "--json"]).output
        let fromInput = CLIRun(["report", "-", "--json"], input: Fixture.standard())
        #expect(fromInput.exitCode == 0)
        #expect(fromInput.error.isEmpty)
        #expect(fromInput.output == fromFile.replacingOccurrences(of: "\"\(path)\"", with: "\"-\""))
        #expect(CLIRun(["show", "-", "--stall", "1"], input: Fixture.standard()).output.hasPrefix("Stall 1 — hang"))
    }

    @Test func emptyOrForeignStandardInputIsAnError() {
        let empty = CLIRun(["report", "-"], input: [])
        #expect(empty.exitCode == 2)
        #expect(empty.error.hasPrefix("Error: -: byte 0: "))
        let text = CLIRun(["show", "-"], input: Array("hello".utf8))
        #expect(text.exitCode == 2)
        #expect(text.error.hasPrefix("Error: -: byte 0: "))
    }

    @Test func theSameFileTwiceIsCountedOnce() throws {
        let path = directory.write("standard.swtrace", Fixture.standard())
        let twice = CLIRun(["report", path, path, "--json"])
        #expect(twice.exitCode == 0)
        #expect(twice.error == "warning: \(path) is given twice; counted once\n")
        #expect(twice.output == CLIRun(["report", path, "--json"]).output)
        // Another spelling of the same file, and a hard link to it.
        let link = directory.path + "/link.swtrace"
        #expect(Foundation.link(path, link) == 0)
        let spelled = directory.path + "/./standard.swtrace"
        let aliases = CLIRun(["report", path, spelled, link])
        #expect(
            aliases.error == "warning: \(spelled) is the same file as \(path); counted once\n"
                + "warning: \(link) is the same file as \(path); counted once\n")
        #expect(aliases.output.contains("Stalls: 6,"))
        // A copy is another trace.
        let copy = directory.write("copy.swtrace", Fixture.standard())
        #expect(CLIRun(["report", path, copy]).output.contains("Stalls: 12,"))
        #expect(CLIRun(["gate", path, path, "--max-stalls", "6"]).exitCode == 0)
        // diff compares a trace with itself on purpose.
        let diff = CLIRun(["diff", path, path])
        #expect(diff.exitCode == 0)
        #expect(diff.error.isEmpty)
    }

    @Test(arguments: ["chrome", "folded", "speedscope"])
    func exportToDashWritesStandardOutput(format: String) throws {
        let path = directory.write("standard.swtrace", Fixture.standard())
        let file = directory.path + "/export.\(format)"
        let written = CLIRun(["export", path, "--format", format, "-o", file])
        #expect(written.exitCode == 0)
        #expect(written.output.isEmpty)
        #expect(written.error == "wrote \(file) (\(format), 6 stalls)\n")
        let printed = CLIRun(["export", path, "--format", format, "-o", "-"])
        #expect(printed.exitCode == 0)
        #expect(printed.error.isEmpty)
        #expect(printed.output == (try String(contentsOfFile: file, encoding: .utf8)))
    }

    @Test func showWithoutStallListsAndShowJSONParses() throws {
        let path = directory.write("standard.swtrace", Fixture.standard())
        let list = CLIRun(["show", path])
        #expect(list.exitCode == 0)
        let rows = list.output.split(separator: "\n").filter { $0.hasPrefix("     ") }
        #expect(rows.count == 6)
        #expect(list.output.contains("Show one: stallwatch show \(path) --stall ID"))
        let listJSON = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["show", path, "--json"]).output.utf8))
                as? [[String: Any]])
        #expect(listJSON.map { $0["id"] as? Int } == [1, 2, 3, 4, 5, 6])
        #expect(listJSON[4]["unfinished"] as? Bool == true)
        let detail = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["show", path, "--stall", "4", "--json"]).output.utf8))
                as? [String: Any])
        #expect(detail["category"] as? String == "database")
        #expect(detail["durationMs"] as? Double == 150)
        let samples = try #require(detail["samples"] as? [[String: Any]])
        #expect(samples.count == 3)
        // The weights are the report's: they add up to the duration.
        #expect(samples.compactMap { $0["weightMs"] as? Double }.reduce(0, +) == 150)
        #expect((samples[0]["frames"] as? [[String: Any]])?.first?["name"] as? String == "sqlite3_step")
        #expect(detail["stackConfidence"] as? Double == 1)
    }
}
