// A rules file adds user rules ahead of the built-ins within each level; bad files are
// rejected with the file, the rule index and the field.

import Foundation
import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct RulesFileTests {
    static let userRules = """
        {
          "version": 1,
          "rules": [
            {
              "name": "my-orm",
              "category": "database",
              "reasonFrom": "matchOutermost",
              "match": { "symbolPrefix": "MyORM." }
            },
            {
              "name": "my-orm-library",
              "category": "database",
              "match": { "module": "libMyORM" }
            },
            {
              "name": "image-decoder",
              "category": "compute",
              "match": { "symbolPrefix": "ImageDecoder." }
            },
            {
              "name": "gpu-ioctl",
              "category": "other",
              "reason": "gpu",
              "match": { "syscall": "ioctl", "state": ["S"] }
            }
          ]
        }
        """

    /// Writes `text` to a fresh file and returns its path.
    func write(_ text: String, name: String = "rules.json") throws -> String {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("stallwatch-core-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func loadError(_ json: String) throws -> RulesFileError? {
        let path = try write(json)
        do {
            _ = try Classifier(rulesFile: path)
            return nil
        } catch {
            #expect(error.file == path)
            // `path: problem`, or `path:LINE: problem` now that an error names its line.
            #expect(error.description.hasPrefix(path + ":"))
            return error
        }
    }

    @Test func fileRulesComeBeforeTheBuiltIns() throws {
        let classifier = try Classifier(rulesFile: write(Self.userRules))
        #expect(classifier.rules.count == 4 + Classifier.builtinRules.count)
        #expect(
            classifier.rules.prefix(4).map(\.name) == [
                "my-orm", "my-orm-library", "image-decoder", "gpu-ioctl",
            ])
        #expect(Array(classifier.rules.dropFirst(4)) == Classifier.builtinRules)
        #expect(classifier.rules[3].level == .state)
    }

    @Test func userFramesRuleMakesAnORMDatabase() throws {
        let classifier = try Classifier(rulesFile: write(Self.userRules))
        let sample = Sample(
            time: 0,
            frames: stack(
                frame("read", in: Lib.libc),
                frame("MyORM.Connection.receive() -> Foundation.Data", in: Lib.app),
                frame("MyORM.Query.all() -> [MyORM.Row]", in: Lib.app)),
            state: .sleeping, syscall: 0, wchan: "sk_wait_data")
        #expect(Classifier().classify(sample).category == .io)
        #expect(
            classifier.classify(sample)
                == Classification(
                    category: .database, reason: "MyORM.Query.all()", ruleName: "my-orm", frameIndex: 2))
    }

    @Test func userModuleRuleMatchesASharedLibrary() throws {
        let classifier = try Classifier(rulesFile: write(Self.userRules))
        let sample = Sample(
            time: 0, frames: stack(frame(nil, in: Lib.orm), frame(nil, in: Lib.orm)), state: .running)
        #expect(
            classifier.classify(sample)
                == Classification(
                    category: .database, reason: "libMyORM.so", ruleName: "my-orm-library", frameIndex: 0))
    }

    @Test func userStackRuleBeatsBuiltInStackRules() throws {
        let classifier = try Classifier(rulesFile: write(Self.userRules))
        let sample = Sample(
            time: 0,
            frames: stack(
                frame("__lll_lock_wait", in: Lib.libc),
                frame("pthread_mutex_lock", in: Lib.libc),
                frame("FeedApp.ImageDecoder.decode(Foundation.Data) -> FeedApp.Image", in: Lib.app)),
            state: .sleeping, syscall: 202)
        #expect(Classifier().classify(sample).category == .lockWait)
        #expect(
            classifier.classify(sample)
                == Classification(
                    category: .compute, reason: "FeedApp.ImageDecoder.decode(Foundation.Data)",
                    ruleName: "image-decoder", frameIndex: 2))
    }

    @Test func userStateRuleBeatsBuiltInStateRulesButNotStackRules() throws {
        let classifier = try Classifier(rulesFile: write(Self.userRules))
        let ioctl = Sample(
            time: 0, frames: stack(frame("ioctl", in: Lib.libc)), state: .sleeping, syscall: 16)
        #expect(
            classifier.classify(ioctl)
                == Classification(category: .other, reason: "gpu", ruleName: "gpu-ioctl"))
        var inSQLite = ioctl
        inSQLite.frames.insert(frame("sqlite3_step", in: Lib.sqlite), at: 1)
        #expect(classifier.classify(inSQLite).category == .database)
    }

    @Test func builtInJSONIsTheBuiltInRules() throws {
        let decoded = try Classifier.decodeRules(json: Classifier.builtinRulesJSON, source: "<test>")
        #expect(decoded == Classifier.builtinRules)
        #expect(decoded.count >= 20)
    }

    @Test func rulesRoundTripThroughJSON() throws {
        let encoded = try JSONEncoder().encode(Classifier.builtinRules)
        let text = "{\"version\": 1, \"rules\": \(String(decoding: encoded, as: UTF8.self))}"
        #expect(
            try Classifier.decodeRules(json: text, source: "<round trip>") == Classifier.builtinRules)
    }

    @Test func unknownCategoryNamesRuleAndField() throws {
        let error = try #require(
            try loadError(
                #"{"version": 1, "rules": [{"name": "a", "category": "io", "match": {"syscall": "read"}}, {"name": "b", "category": "db", "match": {"module": "libMyORM"}}]}"#
            ))
        #expect(error.ruleIndex == 1)
        #expect(error.field == "category")
        #expect(error.message.contains("unknown category 'db'"))
        #expect(error.message.contains("lockWait"))
    }

    @Test func missingNameIsReported() throws {
        let error = try #require(
            try loadError(#"{"version": 1, "rules": [{"category": "io", "match": {"syscall": "read"}}]}"#)
        )
        #expect(error.ruleIndex == 0)
        #expect(error.field == "name")
        #expect(error.message == "missing required field")
    }

    @Test func unknownSyscallIsReported() throws {
        let error = try #require(
            try loadError(
                #"{"version": 1, "rules": [{"name": "x", "category": "io", "match": {"syscall": ["read", "fsyncc"]}}]}"#
            ))
        #expect(error.ruleIndex == 0)
        #expect(error.field == "match.syscall")
        #expect(error.message == "unknown x86_64 syscall 'fsyncc'")
    }

    @Test func misspelledFieldIsRejectedNotIgnored() throws {
        let error = try #require(
            try loadError(
                #"{"version": 1, "rules": [{"name": "x", "category": "io", "match": {"symbolprefix": "MyORM."}}]}"#
            ))
        #expect(error.field == "match.symbolprefix")
        #expect(error.message.hasPrefix("unknown field"))
    }

    @Test func emptyMatchIsRejected() throws {
        let error = try #require(
            try loadError(#"{"version": 1, "rules": [{"name": "x", "category": "io", "match": {}}]}"#))
        #expect(error.field == "match")
        #expect(error.message.contains("at least one"))
    }

    @Test func wrongTypeIsReportedWithItsPath() throws {
        let error = try #require(
            try loadError(
                #"{"version": 1, "rules": [{"name": "x", "category": "io", "match": {"symbol": "write", "maxDepth": "four"}}]}"#
            ))
        #expect(error.ruleIndex == 0)
        #expect(error.field == "match.maxDepth")
        #expect(error.message.contains("integer"))
    }

    @Test func badValuesAreReported() throws {
        let cases: [(String, String)] = [
            (
                #"{"name": "x", "category": "io", "match": {"symbol": "write", "maxDepth": 0}}"#,
                "match.maxDepth"
            ),
            (#"{"name": "x", "category": "io", "match": {"state": "sleepy"}}"#, "match.state"),
            (#"{"name": "x", "category": "io", "level": "kernel", "match": {"state": "D"}}"#, "level"),
            (
                #"{"name": "x", "category": "io", "reasonFrom": "matchOutermost", "match": {"state": "D"}}"#,
                "reasonFrom"
            ),
            (#"{"name": "", "category": "io", "match": {"state": "D"}}"#, "name"),
            (#"{"name": "x", "category": "io", "match": {"module": ""}}"#, "match.module"),
        ]
        for (rule, field) in cases {
            let error = try #require(try loadError("{\"version\": 1, \"rules\": [\(rule)]}"))
            #expect(error.field == field, "\(rule)")
            #expect(error.ruleIndex == 0)
        }
    }

    @Test func duplicateNamesAreRejected() throws {
        let error = try #require(
            try loadError(
                #"{"version": 1, "rules": [{"name": "x", "category": "io", "match": {"state": "D"}}, {"name": "x", "category": "io", "match": {"state": "R"}}]}"#
            ))
        #expect(error.ruleIndex == 1)
        #expect(error.field == "name")
        #expect(error.message.contains("duplicate"))
    }

    @Test func fileLevelProblemsAreReported() throws {
        let version = try #require(try loadError(#"{"version": 2, "rules": []}"#))
        #expect(version.field == "version")
        #expect(version.ruleIndex == nil)
        #expect(version.message.contains("unsupported version 2"))

        let syntax = try #require(try loadError(#"{"version": 1, "rules": [ {"name": "x",, } ]}"#))
        #expect(syntax.ruleIndex == nil)
        #expect(!syntax.message.isEmpty)

        let missing = try #require(try loadError(#"{"rules": []}"#))
        #expect(missing.field == "version")
    }

    @Test func unreadableFileNamesThePath() {
        let path = "/nonexistent/stallwatch/rules.json"
        #expect {
            try Classifier(rulesFile: path)
        } throws: { error in
            guard let error = error as? RulesFileError else { return false }
            return error.file == path && error.message == "cannot open (No such file or directory)"
        }
    }

    /// A FIFO waited for a writer (or said "permission denied"), /dev/zero was read for ever;
    /// 1e20, 1.5 and -5 said "The given data was not valid JSON"; a user rule could take a
    /// built-in's name. Each now says what is wrong, where.
    @Test func badInputsSayWhatIsWrongWhere() throws {
        let directory = NSTemporaryDirectory() + "rules-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(mkfifo(directory + "/fifo.json", 0o600) == 0)
        func message(_ path: String) -> String? {
            do {
                _ = try Classifier.loadRules(fromFile: path)
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(message(directory + "/fifo.json")?.hasSuffix("fifo.json: not a regular file (a FIFO)") == true)
        #expect(message("/dev/zero") == "/dev/zero: not a regular file (a device)")
        func rule(_ match: String, name: String = "mine") throws -> String? {
            let path = directory + "/rules.json"
            try #"{"version": 1, "rules": [{"name": "\#(name)", "category": "io", "match": \#(match)}]}"#
                .write(toFile: path, atomically: true, encoding: .utf8)
            return message(path).map { String($0.dropFirst(path.count)) }
        }
        #expect(
            try rule(#"{"symbol": "f", "maxDepth": 1e20}"#)
                == ":1: rule 0, field 'match.maxDepth': must be a whole number from 1 to 2147483647, got 1e+20")
        #expect(
            try rule(#"{"symbol": "f", "maxDepth": 1.5}"#)
                == ":1: rule 0, field 'match.maxDepth': must be a whole number from 1 to 2147483647, got 1.5")
        #expect(
            try rule(#"{"minDelta": {"userTime": -5}}"#)
                == ":1: rule 0, field 'match.minDelta': 'userTime' must be a whole number from 1 to "
                + "1000000000000000000, got -5")
        #expect(
            try rule(#"{"symbol": "f"}"#, name: "cpu-wait")
                == ":1: rule 0, field 'name': 'cpu-wait' is the name of a built-in rule (docs/categories.md); "
                + "choose another")
        #expect(try rule(#"{"symbol": "f", "maxDepth": 3}"#) == nil)
    }

    @Test func documentedExampleLoads() throws {
        let docs = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/categories.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let start = try #require(text.range(of: "```json\n"))
        let end = try #require(text.range(of: "```", range: start.upperBound..<text.endIndex))
        let rules = try Classifier.decodeRules(
            json: String(text[start.upperBound..<end.lowerBound]), source: "docs/categories.md")
        #expect(
            rules.map(\.name) == ["my-orm", "my-orm-library", "image-decoder", "gpu-ioctl", "log-write"])
        #expect(rules[4].level == .state)
    }

    @Test func documentedMessages() throws {
        let error = try #require(
            try loadError(
                #"{"version": 1, "rules": [{"name": "x", "category": "io", "match": {"symbolprefix": "MyORM."}}]}"#
            ))
        #expect(
            error.message
                == "unknown field (expected one of symbol, symbolPrefix, symbolContains, module, maxDepth, state, syscall, cpu, minDelta, wait)"
        )
        let category = try #require(
            try loadError(
                #"{"version": 1, "rules": [{"name": "b", "category": "db", "match": {"module": "x"}}]}"#))
        #expect(
            category.description.hasSuffix(
                "rule 0, field 'category': unknown category 'db' (expected one of compute, io, lockWait, database, other)"
            ))
    }

    @Test func errorsNameTheLineOfTheOffendingValue() throws {
        let json = """
            {
              "version": 1,
              "rules": [
                { "name": "a", "category": "io", "match": { "symbol": "x" } },
                {
                  "name": "b",
                  "category": "db",
                  "match": { "symbol": "y" }
                },
                {
                  "name": "c",
                  "match": { "symbol": "z" }
                },
                { "name": "a", "category": "io", "match": { "syscall": "fsyncc" } }
              ]
            }
            """
        let category = try #require(try loadError(json))
        #expect(category.line == 7)
        #expect(category.description.contains("rules.json:7: rule 1, field 'category': unknown category 'db'"))
        // A missing field: the line of its rule.
        let missing = try #require(try loadError(json.replacingOccurrences(of: "\"db\"", with: "\"io\"")))
        #expect(missing.line == 10 && missing.ruleIndex == 2 && missing.field == "category")
        let fixed = json.replacingOccurrences(of: "\"db\"", with: "\"io\"")
            .replacingOccurrences(of: "\"name\": \"c\",", with: "\"name\": \"c\", \"category\": \"io\",")
        let syscall = try #require(try loadError(fixed))
        #expect(syscall.line == 14 && syscall.field == "match.syscall")
        let duplicate = try #require(try loadError(fixed.replacingOccurrences(of: "fsyncc", with: "fsync")))
        #expect(duplicate.line == 14 && duplicate.message.contains("duplicate"))
        // Not JSON: the line of the first byte in error.
        let syntax = try #require(
            try loadError("{\n  \"version\": 1,\n  \"rules\": [\n    {\"name\": \"x\",, }\n  ]\n}\n"))
        #expect(syntax.line == 4)
        #expect(syntax.description.hasSuffix(":4: The given data was not valid JSON."))
    }
}
