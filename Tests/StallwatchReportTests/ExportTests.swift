// Each export format is well formed for its viewers: Chrome JSON has traceEvents with name/ph/ts/pid/tid (+dur for X), folded lines end in an integer weight, speedscope has its schema's required fields.
import Foundation
import Testing

@testable import StallwatchReport

@Suite struct ExportTests {
    let directory = TemporaryDirectory()

    func export(_ format: String, _ bytes: [UInt8] = Fixture.standard()) throws -> String {
        let trace = directory.write("in.swtrace", bytes)
        let output = directory.path + "/out.\(format)"
        let run = CLIRun(["export", trace, "--format", format, "-o", output])
        #expect(run.exitCode == 0, "\(run.error)")
        #expect(run.error == "wrote \(output) (\(format), 6 stalls)\n")
        return try #require(directory.read("out.\(format)"))
    }

    @Test func chromeTraceEventsHaveTheRequiredFields() throws {
        let text = try export("chrome", Fixture.standard(mode: .full, withCallouts: true))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let events = try #require(json["traceEvents"] as? [[String: Any]])
        for event in events {
            for field in ["name", "ph", "ts", "pid", "tid"] { #expect(event[field] != nil, "\(field) in \(event)") }
            if event["ph"] as? String == "X" { #expect(event["dur"] is NSNumber) }
        }
        let stalls = events.filter { $0["cat"] as? String == "stall" }
        #expect(stalls.count == 6)
        #expect(stalls.allSatisfy { $0["ph"] as? String == "X" && $0["tid"] as? Int == 4242 })
        let first = try #require(stalls.first)
        #expect(first["name"] as? String == "hang compute: FixtureApp/Feed.swift:12")
        #expect(first["ts"] as? Double == 200_000)
        #expect(first["dur"] as? Double == 300_000)
        let samples = events.filter { $0["cat"] as? String == "sample" }
        #expect(samples.count == 13)
        #expect(samples.allSatisfy { $0["ph"] as? String == "i" && $0["s"] as? String == "t" && $0["sf"] != nil })
        let callouts = events.filter { $0["cat"] as? String == "callout" }
        #expect(callouts.count == 10)
        #expect(callouts.allSatisfy { $0["ph"] as? String == "X" })
        // Every sample's stack frame id resolves, and parents chain to a root.
        let frames = try #require(json["stackFrames"] as? [String: [String: Any]])
        for sample in samples {
            var id = String(describing: sample["sf"]!)
            var depth = 0
            while let frame = frames[id] {
                depth += 1
                guard let parent = frame["parent"] as? String else { break }
                id = parent
            }
            #expect(depth == 3)
        }
    }

    @Test func foldedLinesAreStackSpaceWeight() throws {
        let text = try export("folded")
        let lines = text.split(separator: "\n")
        #expect(!lines.isEmpty)
        let pattern = try Regex("^.+ [0-9]+$")
        for line in lines { #expect(line.wholeMatch(of: pattern) != nil, "\(line)") }
        #expect(
            text == """
                compute;FixtureApp.main();FixtureApp.Feed.reload();FixtureApp.checksum(Swift.Int) -> Swift.Int 286000
                database;FixtureApp.main();FixtureApp.Cache.lookup();sqlite3_step 130000
                io;FixtureApp.main();FixtureApp.Store.save();fsync 31000
                lockWait;FixtureApp.main();FixtureApp.Cache.lookup();pthread_mutex_lock 43000

                """)
    }

    @Test func foldedFrameNamesCannotBreakTheFormat() {
        #expect(FoldedStacksExporter.sanitize("a;b\nc") == "a:b c")
        #expect(FoldedStacksExporter.sanitize("") == "?")
    }

    @Test func speedscopeHasItsRequiredFields() throws {
        let text = try export("speedscope")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(json["$schema"] as? String == "https://www.speedscope.app/file-format-schema.json")
        let shared = try #require(json["shared"] as? [String: Any])
        let frames = try #require(shared["frames"] as? [[String: Any]])
        #expect(frames.allSatisfy { $0["name"] is String })
        let profiles = try #require(json["profiles"] as? [[String: Any]])
        #expect(profiles.count == 1)
        let profile = profiles[0]
        #expect(profile["type"] as? String == "sampled")
        #expect(profile["unit"] as? String == "microseconds")
        for field in ["name", "startValue", "endValue"] { #expect(profile[field] != nil) }
        let samples = try #require(profile["samples"] as? [[Int]])
        let weights = try #require(profile["weights"] as? [Int])
        #expect(samples.count == weights.count)
        #expect(samples.allSatisfy { $0.allSatisfy { $0 >= 0 && $0 < frames.count } })
        #expect(weights.reduce(0, +) == profile["endValue"] as? Int)
        let total: Int = weights.reduce(0, +)
        #expect(total == 490_000)  // the folded weights: 286 + 130 + 31 + 43 ms
        // Roots are categories.
        #expect(Set(samples.map { frames[$0[0]]["name"] as? String }) == ["compute", "io", "database", "lockWait"])
    }

    @Test func badFormatIsAUsageError() {
        let run = CLIRun(["export", "x.swtrace", "--format", "svg", "-o", "-"])
        #expect(run.exitCode == 2)
        #expect(
            run.error.hasPrefix(
                "Error: The value 'svg' is invalid for '--format': expected one of chrome, folded, speedscope, jsonl, otlp-json, pprof\n"
            ))
    }

    @Test func unwritableOutputExits2() {
        let trace = directory.write("in.swtrace", Fixture.standard())
        let run = CLIRun(["export", trace, "--format", "folded", "-o", directory.path + "/no/such/dir/out"])
        #expect(run.exitCode == 2)
        #expect(run.error == "Error: \(directory.path)/no/such/dir/out: cannot write (No such file or directory)\n")
    }
}
