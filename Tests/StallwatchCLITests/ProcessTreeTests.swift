// A recording is a process tree: every process writes its own trace and none truncates another's,
// and report, show and gate read the recording's trace as the whole tree, its processes named.
import Foundation
import StallwatchTestSupport
import Testing

@Suite(.serialized) struct ProcessTreeTests {
    let directory = TemporaryDirectory()

    static var host: String { BinaryRun.productDirectory + "/StallwatchTestHost" }

    /// `report PATH --json`, parsed.
    private func reportJSON(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        let run = try runStallwatch(["report", path, "--json"])
        #expect(run.exitCode == 0, "\(run)", sourceLocation: sourceLocation)
        return try #require(
            try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any],
            sourceLocation: sourceLocation)
    }

    /// Records the test host's `process-tree 2` (it and two copies of itself, each with a stall,
    /// all running at once) with `options`; returns the root's pid.
    private func record(_ trace: String, _ options: [String] = []) throws -> Int {
        let run = try runStallwatch(
            ["record", "-o", trace, "--budget", "16"] + options + ["--", Self.host, "process-tree", "2"])
        #expect(run.exitCode == 0, "\(run)")
        let line = try #require(
            run.output.split(separator: "\n").first { $0.hasPrefix("pid=") && $0.contains("children=2") })
        return try #require(Int(line.dropFirst(4).prefix { $0 != " " }))
    }

    @Test(arguments: [[], ["--no-preload"]])
    func everyProcessOfARecordedTreeWritesAWholeTraceOfItsOwn(options: [String]) throws {
        let trace = directory.path + "/tree\(options.count).swtrace"
        let root = try record(trace, options)
        // The root wrote the trace; each copy a file named for its program and pid.
        let children = try FileManager.default.contentsOfDirectory(atPath: trace + ".d").sorted()
        #expect(children.count == 2, "\(children)")
        var pids: Set<Int> = [root]
        for child in children {
            let json = try reportJSON(trace + ".d/" + child)
            let header = try #require((json["traces"] as? [[String: Any]])?.first)
            let pid = try #require(header["pid"] as? Int)
            // Whole (report exits 0), its own (the pid in its header is the one in its name).
            #expect(child == "StallwatchTestH-\(pid).swtrace", "\(child): \(header)")
            #expect(header["stalls"] as? Int ?? 0 >= 1, "\(child): \(header)")
            pids.insert(pid)
        }
        #expect(pids.count == 3, "\(pids)")
        // The trace is the recording: three processes, the root first, each with its stall.
        let json = try reportJSON(trace)
        let traces = try #require(json["traces"] as? [[String: Any]])
        #expect(traces.count == 3)
        #expect(traces.first?["path"] as? String == trace && traces.first?["pid"] as? Int == root, "\(traces)")
        let tree = try #require((json["processTrees"] as? [[String: Any]])?.first)
        #expect(tree["trace"] as? String == trace)
        let processes = try #require(tree["processes"] as? [[String: Any]])
        #expect(Set(processes.compactMap { $0["pid"] as? Int }) == pids, "\(processes)")
        #expect(processes.first?["root"] as? Bool == true && processes.first?["pid"] as? Int == root)
        #expect(processes.allSatisfy { $0["stalls"] as? Int ?? 0 >= 1 }, "\(processes)")
        let text = try runStallwatch(["report", trace, "--wide"])
        #expect(text.exitCode == 0, "\(text)")
        #expect(text.output.contains("recording \(trace), 3 processes: StallwatchTestH \(root) (root), "), "\(text)")
        // A stall is named by the process it is in.
        let ambiguous = try runStallwatch(["show", trace, "--stall", "1"])
        #expect(ambiguous.exitCode == 2, "\(ambiguous)")
        #expect(ambiguous.error.contains("stall 1 is in 3 processes of the recording"), "\(ambiguous)")
        #expect(ambiguous.error.contains("--stall \(root):1 (StallwatchTestH (pid \(root), \(trace)))"), "\(ambiguous)")
        let one = try runStallwatch(["show", trace, "--stall", "\(root):1"])
        #expect(one.exitCode == 0, "\(one)")
        let list = try runStallwatch(["show", trace, "--wide"])
        #expect(list.exitCode == 0, "\(list)")
        #expect(list.output.hasPrefix("\(trace): a recording of 3 processes"), "\(list)")
        // Every process's stalls count.
        try expectExit(1, ["gate", trace, "--max-stalls", "2"])
        try expectExit(0, ["gate", trace, "--max-stalls", "100"])
        try expectExit(0, ["export", trace, "--format", "folded", "-o", directory.path + "/tree.folded"])
        // Recorded again: the new recording replaces the old one, whose copies had other pids.
        let again = try record(trace, options)
        let after = try FileManager.default.contentsOfDirectory(atPath: trace + ".d")
        #expect(after.count == 2 && Set(after).isDisjoint(with: children), "\(children) then \(after)")
        #expect((try reportJSON(trace)["traces"] as? [[String: Any]])?.first?["pid"] as? Int == again)
    }

    @Test func withNoChildrenOnlyTheCommandsOwnProcessRecords() throws {
        let trace = directory.path + "/root-only.swtrace"
        let root = try record(trace, ["--no-children"])
        #expect(!FileManager.default.fileExists(atPath: trace + ".d"))
        let traces = try #require(try reportJSON(trace)["traces"] as? [[String: Any]])
        #expect(traces.count == 1 && traces.first?["pid"] as? Int == root, "\(traces)")
    }

    /// A process that exec'd (or was killed) the moment its recording began leaves an empty file
    /// in T.d: it said nothing, and the recording is still whole. `report` exited 2 on one
    /// ("byte 0: empty, not a trace") after a real sourcekit-lsp session.
    @Test func anEmptyChildTraceIsLeftOutOfTheRecording() throws {
        let trace = directory.write("tree.swtrace", Fixture.standard())
        try FileManager.default.createDirectory(
            atPath: directory.path + "/tree.swtrace.d", withIntermediateDirectories: true)
        _ = directory.write("tree.swtrace.d/swiftc-4242.swtrace", [])
        let json = try reportJSON(trace)
        let traces = try #require(json["traces"] as? [[String: Any]])
        #expect(traces.map { $0["path"] as? String } == [trace])
        // Given by name, an empty file is still an error: it is not a trace.
        let single = try runStallwatch(["report", directory.path + "/tree.swtrace.d/swiftc-4242.swtrace"])
        #expect(single.exitCode == 2, "\(single)")
    }
}
