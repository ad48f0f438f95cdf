// What the CLI says when it is given something it cannot use, or when what was asked for is
// not there: the value, the option and the reason, in one line a person reads at 100 columns.
import Foundation
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct MessageTests {
    let directory = TemporaryDirectory()

    /// `record --budget 1e20` and `show --stall 99999999999999999999` said "expected a number
    /// of at least 0" of numbers that are.
    @Test func numbersOutOfRangeSayTheRange() {
        let budget = CLIRun(["record", "--budget", "1e20", "-o", directory.path + "/t.swtrace", "--", "true"])
        #expect(budget.exitCode == 2)
        #expect(
            budget.error.contains(
                "The value '1e20' is invalid for '--budget': expected a number of milliseconds from 0 to 86400000 "
                    + "(a day)"), "\(budget.error)")
        let path = directory.write("standard.swtrace", Fixture.standard())
        let stall = CLIRun(["show", path, "--stall", "99999999999999999999"])
        #expect(stall.exitCode == 2)
        #expect(stall.error.contains("expected a whole number from 0 to 18446744073709551615"), "\(stall.error)")
    }

    /// `report --by nosuchkey` printed `(none) 6 stalls`, as if the key had a value "(none)".
    @Test func groupingByAKeyNoStallHasSaysSo() {
        let path = directory.write("states.swtrace", Fixture.standard(appState: true))
        let run = CLIRun(["report", path, "--by", "nosuchkey"])
        #expect(run.exitCode == 0)
        #expect(run.output.contains("  by nosuchkey  no stall has the app-state key 'nosuchkey'"), "\(run.output)")
        #expect(!run.output.contains("(none)"))
    }

    /// A 64 KiB app-state value made a 65,557-column line; values are cut to the width.
    @Test func longValuesAreCutToTheWidth() {
        let long = String(repeating: "x", count: 65_535)
        let bytes = Fixture.standard(
            extra: [.stallContext(.init(id: 1, expected: nil, state: [.init(key: "screen", value: long)]))])
        let path = directory.write("long.swtrace", bytes)
        let run = CLIRun(["report", path, "--by", "screen"], environment: ["COLUMNS": "100"])
        #expect(run.exitCode == 0, "\(run.error)")
        let lines = run.output.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("    xxxx") && $0.contains("…  1 stall") }, "no cut value line")
        // (A command to copy, with the temporary directory's long path, is not wrapped.)
        let wide = lines.filter { $0.count > 100 && !$0.contains("stallwatch show") }.map { String($0.prefix(120)) }
        #expect(wide.isEmpty, "\(wide)")
    }

    /// The values' column is padded by characters, as every other column: an emoji or a
    /// decomposed accent (two UTF-16 units, one character) was cut to "�" or lost its letter.
    @Test func valuesArePaddedByCharacters() {
        let values = ["😀", "e\u{301}x", "Settings"]
        let bytes = Fixture.standard(
            extra: values.enumerated().map { index, value in
                .stallContext(.init(id: UInt64(index + 1), expected: nil, state: [.init(key: "screen", value: value)]))
            })
        let path = directory.write("wide.swtrace", bytes)
        let run = CLIRun(["report", path, "--by", "screen"], environment: ["COLUMNS": "100"])
        #expect(run.exitCode == 0, "\(run.error)")
        let lines = run.output.split(separator: "\n").map(String.init)
        for value in values {
            let padded = "    \(value)" + String(repeating: " ", count: 10 - value.count)
            #expect(lines.contains { $0.hasPrefix(padded) }, "\(value)")
        }
        #expect(!run.output.contains("\u{FFFD}"), "\(run.output)")
    }

    /// `--what-if` given twice printed its line twice; an unmatched one does not say that the
    /// stalls the app expected are never matched (they are counted apart).
    @Test func whatIfOncePerSignatureAndExpectedStallsNamed() throws {
        let path = directory.write("states.swtrace", Fixture.standard(appState: true))
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["report", path, "--json"]).output.utf8))
                as? [String: Any])
        let signature = try #require((json["signatures"] as? [[String: Any]])?.first)
        let text =
            "\(signature["category"] as? String ?? ""): "
            + (signature["frames"] as? [String] ?? []).joined(separator: " ← ")
        let twice = CLIRun(["gate", path, "--max-stalls", "99", "--what-if", text, "--what-if", text])
        #expect(twice.exitCode == 0, "\(twice.error)")
        #expect(twice.output.components(separatedBy: "As if fixed:").count == 2, "\(twice.output)")
        let unknown = CLIRun(["gate", path, "--max-stalls", "99", "--what-if", "io: nowhere()"])
        #expect(unknown.exitCode == 2)
        #expect(
            unknown.error.contains("or its stalls are among the 1 the app expected (expectLong)"), "\(unknown.error)")
    }

    /// `show`'s list marked neither expected nor stopped stalls.
    @Test func theListMarksExpectedAndStoppedStalls() {
        // Stopped for 100 ms inside stall 1 (1.2 s to 1.5 s).
        let bytes = Fixture.standard(appState: true, extra: [.stopped(from: 1_300_000_000, length: 100_000_000)])
        let path = directory.write("marks.swtrace", bytes)
        let run = CLIRun(["show", path])
        #expect(run.exitCode == 0, "\(run.error)")
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("     1  ") && $0.contains(" ms! ") }, "\(run.output)")
        #expect(lines.contains { $0.hasPrefix("     3  ") && $0.contains(" ms* ") }, "\(run.output)")
        #expect(lines.contains { $0.hasPrefix("     5  ") && $0.contains(" ms+ ") }, "\(run.output)")
        #expect(run.output.contains("* expected (expectLong), counted apart"))
        #expect(run.output.contains("! the process was stopped (SIGSTOP, a debugger) during it"))
    }
}
