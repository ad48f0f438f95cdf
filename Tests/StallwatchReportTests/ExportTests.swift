// Each export format is well formed for its viewers: Chrome JSON has traceEvents with name/ph/ts/pid/tid (+dur for X), folded lines end in an integer weight, speedscope has its schema's required fields.
import Foundation
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
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
                compute;main();Feed.reload();checksum(_:) 320000
                database;main();Cache.lookup();sqlite3_step 150000
                io;main();Store.save();fsync 65000
                lockWait;main();Cache.lookup();pthread_mutex_lock 60000

                """)
    }

    @Test func foldedFrameNamesCannotBreakTheFormat() {
        #expect(FoldedStacksExporter.sanitize("a;b\nc") == #"a:b\nc"#)
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
        #expect(total == 595_000)  // the folded weights, and the report's stall total: 320 + 150 + 65 + 60 ms
        // Roots are categories.
        #expect(Set(samples.map { frames[$0[0]]["name"] as? String }) == ["compute", "io", "database", "lockWait"])
    }

    @Test func speedscopeNamesTheVersionThatWroteIt() throws {
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(try export("speedscope").utf8)) as? [String: Any])
        #expect(json["exporter"] as? String == "stallwatch \(StallwatchVersion.current)")
        #expect(CLIRun(["--version"]).output == "stallwatch \(StallwatchVersion.current)\n")
    }

    @Test func stallsWithoutSamplesStillAppearAndAreCounted() throws {
        let trace = directory.write("hung.swtrace", Fixture.unfinishedWithoutSamples())
        let output = directory.path + "/hung.folded"
        let run = CLIRun(["export", trace, "--format", "folded", "-o", output])
        #expect(run.exitCode == 0)
        #expect(
            run.error == """
                note: 1 of 2 stalls carried no samples (1 unfinished); each is drawn as one marker frame
                wrote \(output) (folded, 2 stalls)

                """)
        // The hung stall reaches the trace's last record: 2 s of it; the timed-out sample
        // stands for the other stall's whole 40 ms (the report's rule: the first sample also
        // stands for the time before it).
        #expect(
            directory.read("hung.folded") == """
                io;[capture timed out] 40000
                other;[unfinished stall, no samples] 2000000

                """)
        let speedscope = directory.path + "/hung.speedscope"
        #expect(CLIRun(["export", trace, "--format", "speedscope", "-o", speedscope]).exitCode == 0)
        let text = try #require(directory.read("hung.speedscope"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let frames = try #require((json["shared"] as? [String: Any])?["frames"] as? [[String: Any]])
        let profile = try #require((json["profiles"] as? [[String: Any]])?.first)
        let samples = try #require(profile["samples"] as? [[Int]])
        let weights = try #require(profile["weights"] as? [Int])
        let stacks = samples.map { $0.map { frames[$0]["name"] as? String ?? "?" } }
        #expect(stacks == [["io", "[capture timed out]"], ["other", "[unfinished stall, no samples]"]])
        #expect(weights == [40_000, 2_000_000])
        #expect(profile["endValue"] as? Int == 2_040_000)
        // Chrome says it too, in its own words; a trace whose stalls all have samples says nothing.
        let chrome = CLIRun(["export", trace, "--format", "chrome", "-o", directory.path + "/hung.json"])
        #expect(
            chrome.error.hasPrefix(
                "note: 1 of 2 stalls carried no samples (1 unfinished); their slices have no sample marks\n"))
        #expect(
            ExportNotes.stallsWithoutSamples(
                ReportBuilder().analyze([try TraceLoader.load(path: standardTrace).get()])[0]) == nil)
    }

    var standardTrace: String { directory.write("standard.swtrace", Fixture.standard()) }

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
