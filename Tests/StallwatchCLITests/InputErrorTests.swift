// Unreadable input exits 2 with one line naming the file and byte offset; a truncated trace is read up to its last whole record with a warning.
import Foundation
import StallwatchCLITestSupport
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct InputErrorTests {
    let directory = TemporaryDirectory()

    @Test(arguments: ["report", "show", "export", "diff", "gate"])
    func missingFile(command: String) {
        let path = directory.path + "/missing.swtrace"
        let arguments: [String] =
            switch command {
            case "show": [command, path, "--stall", "1"]
            case "export": [command, path, "--format", "folded", "-o", "-"]
            case "diff": [command, path, path]
            case "gate": [command, path, "--max-stalls", "1"]
            default: [command, path]
            }
        let run = CLIRun(arguments)
        #expect(run.exitCode == 2)
        let lines = run.error.split(separator: "\n")
        #expect(lines.count >= 1)
        #expect(lines[0] == "Error: \(path): byte 0: cannot open (No such file or directory)")
        #expect(run.output.isEmpty)
    }

    @Test func garbageFile() {
        let path = directory.write("garbage.swtrace", Array("this is not a trace at all\n".utf8))
        let run = CLIRun(["report", path])
        #expect(run.exitCode == 2)
        #expect(run.error.split(separator: "\n").count == 1)
        #expect(run.error.hasPrefix("Error: \(path): byte 0: does not start with the trace magic"))
    }

    @Test func traceCutInsideItsPreambleIsUnreadable() {
        let path = directory.write("cut.swtrace", Array(Fixture.standard().prefix(5)))
        let run = CLIRun(["report", path])
        #expect(run.exitCode == 2)
        #expect(
            run.error
                == "Error: \(path): byte 0: the input ends inside a record header; the last 5 bytes are an incomplete record\n"
        )
    }

    @Test func truncatedTraceIsReportedUpToItsLastWholeRecord() throws {
        let whole = Fixture.standard()
        let path = directory.write("truncated.swtrace", Array(whole.dropLast(3)))
        let run = CLIRun(["report", path, "--json"])
        #expect(run.exitCode == 0)
        let warning = try #require(run.error.split(separator: "\n").first)
        #expect(warning.hasPrefix("warning: \(path): byte "))
        #expect(warning.contains("the input ends inside a latencyHistogram record"))
        #expect(run.output.contains("\"total\" : 6"))
    }

    @Test func truncatedTraceInOtherCommandsToo() {
        let path = directory.write("truncated2.swtrace", Array(Fixture.standard().dropLast(3)))
        let run = CLIRun(["gate", path, "--max-stalls", "100"])
        #expect(run.exitCode == 0)
        #expect(run.error.hasPrefix("warning: \(path): byte "))
    }

    @Test func corruptRegionMakesReportExit2AfterPrintingWhatItRead() throws {
        var bytes = Fixture.standard()
        // Zero a stretch in the middle: a reserved kind 0, then the decoder resyncs or gives up.
        for index in 600..<640 { bytes[index] = 0 }
        let path = directory.write("corrupt.swtrace", bytes)
        let run = CLIRun(["report", path])
        #expect(run.exitCode == 2)
        let first = try #require(run.error.split(separator: "\n").first)
        #expect(first.hasPrefix("Error: \(path): byte "))
        #expect(run.output.hasPrefix("Stallwatch report"))
        let gate = CLIRun(["gate", path, "--max-stalls", "100"])
        #expect(gate.exitCode == 2)
        #expect(gate.output.isEmpty)
    }

    @Test(arguments: [
        [UInt8](repeating: 0, count: 4_096),
        (1...3_000).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) },
    ])
    func aJunkTailIsATruncationForEveryCommand(junk: [UInt8]) throws {
        let whole = Fixture.standard()
        let path = directory.write("junk.swtrace", whole + junk)
        let report = CLIRun(["report", path, "--json"])
        #expect(report.exitCode == 0)
        let warning = try #require(report.error.split(separator: "\n").first)
        // Where the junk starts (random junk may first frame as records of unknown kinds).
        let offset = try #require(Int(warning.split(separator: " ")[3].dropLast()))
        #expect(offset >= whole.count)
        #expect(warning.hasPrefix("warning: \(path): byte \(offset): the input ends"))
        #expect(warning.hasSuffix("; using the whole records before it"))
        #expect(report.error.split(separator: "\n").count == 1)
        #expect(report.output.contains("\"total\" : 6"))
        // The gate still gates: it passes and fails on the records before the junk.
        let passed = CLIRun(["gate", path, "--max-stalls", "6"])
        #expect(passed.exitCode == 0)
        #expect(passed.output.hasSuffix("Result: PASS (1 limit)\n"))
        let failed = CLIRun(["gate", path, "--max-stalls", "5"])
        #expect(failed.exitCode == 1)
        #expect(failed.error.hasPrefix("warning: \(path): byte \(offset): "))
        #expect(CLIRun(["show", path, "--stall", "1"]).exitCode == 0)
        #expect(CLIRun(["export", path, "--format", "folded", "-o", "-"]).exitCode == 0)
        #expect(CLIRun(["diff", path, path]).exitCode == 0)
    }

    @Test func unknownStallIsAnError() {
        let path = directory.write("standard.swtrace", Fixture.standard())
        let run = CLIRun(["show", path, "--stall", "99"])
        #expect(run.exitCode == 2)
        #expect(run.error == "Error: \(path): no stall with id 99 (its stalls are 1, 2, 3, 4, 5, 6)\n")
    }
}
