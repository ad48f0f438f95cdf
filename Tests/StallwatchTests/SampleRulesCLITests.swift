// `--rules` changes what the CLI says about a real recording: BlockingMain's photo hashing (a
// compute stall in SampleSupport's PhotoLibrary, linked into the BlockingMain executable) is a
// database stall under a rule for that module and type, and a bad rules file is one error line
// that names the file and line.
import Foundation
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct SampleRulesCLITests {
    /// BlockingMain's blocking run, recorded once for the suite.
    static let recording = Result { () throws -> String in
        let path = NSTemporaryDirectory() + "rules-BlockingMain-\(UUID().uuidString).swtrace"
        let run = try runProduct("BlockingMain", ["--seconds", "1.5"], environment: ["STALLWATCH_TRACE": path])
        guard run.exitCode == 0 else { throw RecordingFailed(run: run) }
        return path
    }

    struct RecordingFailed: Error, CustomStringConvertible {
        var run: ChildRun
        var description: String { "\(run)" }
    }

    /// Writes `text` as a rules file and returns its path.
    func rulesFile(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "rules-\(UUID().uuidString).json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The categories `report --json` gives the signatures whose frames name PhotoLibrary.
    func photoCategories(_ arguments: [String], environment: [String: String] = [:]) throws -> [String] {
        let trace = try Self.recording.get()
        let run = try runProduct(
            "stallwatch", ["report", "--json", "--top", "50"] + arguments + [trace], environment: environment)
        #expect(run.exitCode == 0, "\(run)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any], "\(run.output)")
        let signatures = try #require(report["signatures"] as? [[String: Any]])
        return signatures.compactMap { signature in
            let frames = signature["frames"] as? [String] ?? []
            return frames.contains { $0.contains("PhotoLibrary") } ? signature["category"] as? String : nil
        }
    }

    static let photosAreDatabase = """
        {
          "version": 1,
          "rules": [
            {
              "name": "photo-library-store",
              "category": "database",
              "match": { "symbolContains": "PhotoLibrary", "module": "BlockingMain" }
            }
          ]
        }
        """

    @Test(
        .disabled(if: Sanitizer.thread, "TSan delivers the sampling signal late, away from the running photo hashing"))
    func aRuleForTheModulesFunctionMakesItsStallADatabaseStall() throws {
        let builtIn = try photoCategories([])
        #expect(builtIn == ["compute"])
        let rules = try rulesFile(Self.photosAreDatabase)
        defer { unlink(rules) }
        #expect(try photoCategories(["--rules", rules]) == ["database"])
        // The variable stands in for the option.
        #expect(try photoCategories([], environment: ["STALLWATCH_RULES": rules]) == ["database"])
    }

    @Test(
        .disabled(if: Sanitizer.thread, "TSan delivers the sampling signal late, away from the running photo hashing"))
    func everyClassifyingCommandTakesTheRules() throws {
        let trace = try Self.recording.get()
        let rules = try rulesFile(Self.photosAreDatabase)
        defer { unlink(rules) }
        let show = try runProduct("stallwatch", ["show", "--json", "--rules", rules, trace])
        #expect(show.exitCode == 0, "\(show)")
        let stalls = try #require(
            try JSONSerialization.jsonObject(with: Data(show.output.utf8)) as? [[String: Any]], "\(show.output)")
        let photos = stalls.filter { ($0["signature"] as? [String] ?? []).contains { $0.contains("PhotoLibrary") } }
        #expect(photos.map { $0["category"] as? String } == ["database"], "\(show.output)")
        // One database stall (the query) by the built-in rules, two with the photo rule.
        func databaseLines(_ arguments: [String]) throws -> Int {
            let export = try runProduct("stallwatch", ["export", "--format", "jsonl", "-o", "-"] + arguments + [trace])
            #expect(export.exitCode == 0, "\(export)")
            return export.output.split(separator: "\n").filter { $0.contains("\"category\":\"database\"") }.count
        }
        #expect(try databaseLines([]) == 1)
        #expect(try databaseLines(["--rules", rules]) == 2)
        let gate = try runProduct("stallwatch", ["gate", "--max", "database=1", "--rules", rules, trace])
        // The query and the photo hashing: two database stalls, one over the limit.
        #expect(gate.exitCode == 1, "\(gate.output)")
        let diff = try runProduct("stallwatch", ["diff", "--rules", rules, trace, trace])
        #expect(diff.exitCode == 0, "\(diff)")
    }

    @Test func aBadRulesFileIsOneErrorNamingFileAndLine() throws {
        let trace = try Self.recording.get()
        let rules = try rulesFile(
            """
            {
              "version": 1,
              "rules": [
                {
                  "name": "photo-library-store",
                  "category": "db",
                  "match": { "symbolContains": "PhotoLibrary" }
                }
              ]
            }
            """)
        defer { unlink(rules) }
        for command in [
            ["report"], ["show"], ["export", "--format", "jsonl", "-o", "-"], ["gate", "--max-stalls", "9"],
        ] {
            let run = try runProduct("stallwatch", command + ["--rules", rules, trace])
            #expect(run.exitCode == 2, "\(command): \(run)")
            #expect(run.output.isEmpty, "\(command)")
            #expect(
                run.error.split(separator: "\n") == [
                    "Error: \(rules):6: rule 0, field 'category': unknown category 'db' "
                        + "(expected one of compute, io, lockWait, database, other)"
                ], "\(command): \(run.error)")
        }
        let syntax = try rulesFile("{\n  \"version\": 1,\n  \"rules\": [\n    {\"name\": \"x\",, }\n  ]\n}\n")
        defer { unlink(syntax) }
        let run = try runProduct("stallwatch", ["report", "--rules", syntax, trace])
        #expect(run.exitCode == 2)
        let lines = run.error.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("Error: \(syntax):4: "), "\(run.error)")
    }
}
