// Many traces: directories expand to their traces, the report summarises the fleet and spreads
// each signature over traces, builds and hosts, and decoding on many workers gives the same
// report as on one.
import Foundation
import StallwatchAnalysis
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct FleetTests {
    let directory = TemporaryDirectory()

    func load(_ inputs: [String], workers: Int = TraceLoader.availableCores) throws -> [LoadedTrace] {
        try TraceLoader.load(paths: TraceLoader.expand(inputs), workers: workers).map { try $0.get() }
    }

    @Test func directoriesExpandToTheirTracesRecursivelySortedOnce() {
        let root = directory.path
        let b = directory.write("b.swtrace", Fixture.standard())
        try! FileManager.default.createDirectory(atPath: root + "/a/c", withIntermediateDirectories: true)
        try! FileManager.default.createDirectory(atPath: root + "/.hidden", withIntermediateDirectories: true)
        let ab = directory.write("a/b.swtrace", Fixture.standard())
        let acd = directory.write("a/c/d.swtrace", Fixture.standard())
        _ = directory.write("a/notes.txt", Array("not a trace".utf8))
        _ = directory.write(".hidden/x.swtrace", Fixture.standard())
        #expect(TraceLoader.expand([root]) == [ab, acd, b])
        #expect(TraceLoader.expand([b, root, root + "/missing.swtrace"]) == [b, ab, acd, root + "/missing.swtrace"])
        #expect(TraceLoader.expand([b, b]) == [b, b], "files given twice are the duplicate warning's business")
    }

    @Test func theReportSpreadsSignaturesOverTracesBuildsAndHosts() throws {
        let root = FleetFixture.write(into: directory)
        let report = ReportBuilder().report(try load([root]), top: 10)
        #expect(report.fleet.traces == 6)
        #expect(report.fleet.processes == 1)
        #expect(report.fleet.hosts == 3)
        #expect(report.fleet.builds == 2)
        #expect(report.fleet.appVersions == 2)
        #expect(report.fleet.firstStart == "2026-12-01T10:00:00.000Z")
        #expect(report.traces.map(\.build).sorted().first == "1.0 (aaaaaaaa)")
        #expect(report.traces.allSatisfy { $0.traceID.count == 32 && $0.host != nil })
        try #require(report.signatures.count == 2)

        let parse = report.signatures[0]
        #expect(parse.frames == ["Parser.parse()", "main()"])
        #expect(parse.count == 9)
        #expect(parse.traces == 6)
        #expect(parse.tracesPercent == 100)
        #expect(parse.totalMs == 480)
        #expect(parse.p50Ms == 50)
        #expect(parse.p95Ms == 80)
        #expect(parse.builds.map(\.name) == ["1.0 (aaaaaaaa)", "1.1 (bbbbbbbb)"])
        #expect(parse.builds.map(\.stalls) == [6, 3])
        #expect(parse.hosts.map(\.traces) == [2, 2, 2])

        let save = report.signatures[1]
        #expect(save.category == .io)
        #expect(save.frames == ["Store.save()", "main()"])
        #expect(save.count == 3)
        #expect(save.traces == 3)
        #expect(save.tracesPercent == 50)
        #expect(save.p50Ms == 150)
        #expect(save.p95Ms == 200)
        #expect(save.maxMs == 200)
        #expect(save.builds == [StallReport.GroupCount(name: "1.1 (bbbbbbbb)", stalls: 3, traces: 3)])
        #expect(save.firstSeen == "2026-12-01T10:10:02.050Z")
        #expect(save.lastSeen == "2026-12-01T10:12:02.050Z")
    }

    @Test func theTextSummarisesManyTracesUnlessAskedForEach() throws {
        let root = FleetFixture.write(into: directory)
        let run = CLIRun(["report", root])
        #expect(run.exitCode == 0, "\(run.error)")
        let lines = run.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0] == "Stallwatch report — 6 traces")
        #expect(lines[1] == "  1 process: FleetApp 6")
        #expect(
            lines[2] == "  3 hosts, 2 builds, 2 app versions, \(FleetText.megabytes(report(root).fleet.bytes)) read")
        #expect(lines.contains("  (--list-traces prints one line per trace)"))
        #expect(!run.output.contains("t0.swtrace: FleetApp"))
        #expect(lines.contains("   in 3 of 6 traces (50.0 %), p50 150.0 ms, p95 200.0 ms, max 200.0 ms"))
        #expect(lines.contains("   builds: 1.1 (bbbbbbbb) 3"))
        #expect(lines.contains("   hosts: h1 1, h2 1, h3 1"))
        // 100 columns, but for lines holding a (long, temporary) path and the category line.
        #expect(lines.allSatisfy { $0.count <= 100 || $0.contains(directory.path) || $0.hasPrefix("  by category") })

        // --wide: the temporary paths are longer than 100 columns.
        let listed = CLIRun(["report", root, "--list-traces", "--wide"])
        #expect(listed.output.contains("\(root)/new/t0.swtrace: FleetApp (pid 100), stalls mode"))
        #expect(!listed.output.contains("--list-traces prints"))
    }

    func report(_ root: String) -> StallReport {
        ReportBuilder().report(try! load([root]), top: 10)
    }

    /// The builds and hosts lists fit the report's width: as many as fit, then how many more;
    /// at least one even when that one is too long; all of them with no width (`--wide`).
    @Test func fleetListsFitTheWidth() {
        let hosts = (1...30).map { "host-\($0) \(100 + $0)" }
        let narrow = FleetText.fit("   hosts:", hosts, width: 80)
        #expect(narrow.count <= 80, "\(narrow)")
        #expect(narrow.hasPrefix("   hosts: host-1 101, host-2 102"))
        let shown = narrow.split(separator: ",").count
        #expect(narrow.hasSuffix(" (+\(30 - shown) more)"), "\(narrow)")
        let wide = FleetText.fit("   hosts:", hosts, width: 100)
        #expect(wide.count <= 100 && wide.count > narrow.count)
        #expect(FleetText.fit("   hosts:", hosts, width: nil) == "   hosts: " + hosts.joined(separator: ", "))
        let long = String(repeating: "x", count: 120)
        #expect(FleetText.fit("   builds:", [long, "b 1"], width: 80) == "   builds: \(long) (+1 more)")
        #expect(FleetText.fit("   builds:", [], width: 80) == "   builds:")
    }

    @Test func unreadableFilesAreListedAndTheReportStillPrinted() throws {
        let root = FleetFixture.write(into: directory)
        let garbage = directory.write("fleet/new/garbage.swtrace", Array("not a trace\n".utf8))
        let run = CLIRun(["report", root])
        #expect(run.exitCode == 2)
        #expect(run.output.hasPrefix("Stallwatch report — 6 traces\n"))
        #expect(run.output.contains("  1 unreadable:\n    \(garbage): byte 0: does not start with the trace magic"))
        #expect(run.error.hasPrefix("Error: \(garbage): byte 0: does not start with the trace magic"))
        let json = CLIRun(["report", root, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        let fleet = try #require(object["fleet"] as? [String: Any])
        let unreadable = try #require(fleet["unreadable"] as? [[String: Any]])
        #expect(unreadable.first?["path"] as? String == garbage)
    }

    @Test func diffComparesTwoDirectories() throws {
        let root = FleetFixture.write(into: directory)
        let run = CLIRun(["diff", root + "/old", root + "/new", "--json"])
        #expect(run.exitCode == 0, "\(run.error)")
        let diff = try JSONDecoder().decode(SignatureDiff.self, from: Data(run.output.utf8))
        #expect(diff.added.map(\.frames) == [["Store.save()", "main()"]])
        #expect(diff.added.first?.newCount == 3)
        #expect(diff.gone.isEmpty)
        let parse = try #require((diff.better + diff.worse + diff.unchanged).first)
        #expect(parse.baseCount == 6)
        #expect(parse.newCount == 3)
    }

    @Test func gateChecksADirectory() {
        let root = FleetFixture.write(into: directory)
        #expect(CLIRun(["gate", root, "--max-stalls", "12"]).exitCode == 0)
        let failed = CLIRun(["gate", root, "--max-stalls", "11"])
        #expect(failed.exitCode == 1)
        #expect(failed.output.contains("12"))
        #expect(CLIRun(["gate", root + "/new", "--max", "io=2"]).exitCode == 1)
        #expect(CLIRun(["gate", root + "/old", "--max", "io=0"]).exitCode == 0)
    }

    @Test func anEmptyDirectoryIsAClearError() throws {
        try FileManager.default.createDirectory(atPath: directory.path + "/empty", withIntermediateDirectories: true)
        let run = CLIRun(["report", directory.path + "/empty"])
        #expect(run.exitCode == 2)
        #expect(run.error == "Error: no *.swtrace files in the given directories\n")
    }

    @Test func tracesWithoutAnOriginAreAnUnknownBuildWithAStableID() throws {
        let old = directory.write(
            "old.swtrace",
            FleetFixture.trace(host: "", version: "", buildByte: 0, offset: 0, stalls: [(.parse, 40)], origin: false))
        let first = TraceFacts(try TraceLoader.load(path: old).get())
        let second = TraceFacts(try TraceLoader.load(path: old).get())
        #expect(first.build == "unknown")
        #expect(first.host == nil)
        #expect(first.traceID.count == 32)
        #expect(first.traceID == second.traceID)
    }

    /// Many workers, one worker: the same report, byte for byte.
    @Test func loadingOnManyWorkersGivesTheSameReport() throws {
        let root = FleetFixture.write(into: directory)
        try FileManager.default.createDirectory(atPath: root + "/more", withIntermediateDirectories: true)
        for index in 0..<20 {
            _ = directory.write(
                "fleet/more/m\(index).swtrace",
                FleetFixture.trace(
                    host: "h\(index % 4)", version: "1.\(index % 3)", buildByte: UInt8(index % 3),
                    offset: UInt64(index),
                    stalls: [(.parse, 30 + UInt64(index)), (.save, 90)]))
        }
        let serial = ReportBuilder(workers: 1).report(try load([root], workers: 1), top: 10)
        let parallel = ReportBuilder(workers: 4).report(try load([root], workers: 4), top: 10)
        #expect(try JSONOutput.encode(serial) == JSONOutput.encode(parallel))
    }

    /// Traces added up as they are read, their stalls let go or kept, on one worker or many,
    /// report what the loaded traces and their analyzed stalls report; an input that could
    /// not be read (here the first) is a failure in its place.
    @Test func tracesAddedUpAsTheyAreReadReportWhatTheLoadedTracesReport() throws {
        let root = FleetFixture.write(into: directory)
        _ = directory.write("fleet/0-broken.swtrace", Array("not a trace".utf8))
        _ = directory.write("fleet/app.swtrace", Fixture.app())
        _ = directory.write("fleet/standard.swtrace", Fixture.standard(mode: .full, withCallouts: true))
        let paths = TraceLoader.expand([root])
        let loaded = TraceLoader.load(paths: paths).compactMap { try? $0.get() }
        let builder = ReportBuilder(workers: 1)
        let expected = builder.report(loaded, analyzed: builder.analyze(loaded), top: 10)
        #expect(expected.fleet.traces == paths.count - 1)
        #expect(expected.congestion != nil && expected.frames != nil && expected.loopLatency != nil)
        #expect(expected.loopUtilisation != nil)
        for workers in [1, 3] {
            for keepStalls in [false, true] {
                let tallied = ReportBuilder(workers: workers).loadAndTally(paths: paths, keepStalls: keepStalls)
                #expect(try JSONOutput.encode(builder.report(tallied, top: 10)) == JSONOutput.encode(expected))
                try #require(tallied.results.count == paths.count)
                #expect(throws: TraceLoadError.self) { try tallied.results[0].get() }
                let read = tallied.results.compactMap { try? $0.get() }
                #expect(
                    read.map(\.trace.stalls.count)
                        == (keepStalls ? loaded.map(\.trace.stalls.count) : read.map { _ in 0 }))
                #expect(tallied.analyzed.map(\.count) == (keepStalls ? [0] + loaded.map(\.trace.stalls.count) : []))
            }
        }
    }

    /// Signatures added up a trace at a time and merged are the ones added up in one run.
    @Test func signaturesMergedFromRunsAreTheSignaturesOfOneRun() throws {
        let root = FleetFixture.write(into: directory)
        for index in 0..<12 {
            _ = directory.write(
                "fleet/runs/r\(index).swtrace",
                FleetFixture.trace(
                    host: "h\(index % 3)", version: "2.\(index % 2)", buildByte: UInt8(index % 2),
                    offset: UInt64(index), stalls: [(.parse, 40 + UInt64(index % 4)), (.save, 90), (.parse, 43)]))
        }
        let traces = try load([root], workers: 1)
        let analyzed = ReportBuilder(workers: 1).analyze(traces)
        let facts = traces.map { Optional(TraceFacts($0)) }
        let whole = ReportBuilder.signatures(analyzed, facts: facts, traceCount: traces.count, run: traces.count)
        let merged = ReportBuilder.signatures(analyzed, facts: facts, traceCount: traces.count, workers: 2, run: 1)
        #expect(whole.count > 1)
        #expect(whole == merged)
    }

    /// A trace split between its sync markers decodes to the serial result.
    @Test func aLargeTraceDecodedInChunksIsTheSerialTrace() throws {
        var builder = TraceBuilder()
        builder.add(
            .header(.init(processName: "Big", pid: 1, wallClockStart: FleetFixture.start, clockBase: 0, mode: .full)))
        builder.add(.callSite(.init(id: 1, kind: .post, file: "Big/main.swift", line: 1)))
        builder.add(.symbol(.init(address: 0x10, module: 0, name: "Big.work()")))
        var time: UInt64 = 1_000_000
        for index in 0..<30_000 {
            builder.add(.callout(.init(site: 1, mode: 0, start: time, duration: 2_000 + UInt64(index % 7))))
            time += 10_000
            if index % 3_000 == 0 {
                let id = UInt64(index / 3_000 + 1)
                builder.add(
                    .stallBegan(.init(id: id, start: time, site: 1, mode: 0, phase: .beforeSources, tier: .hitch)))
                builder.add(
                    .sample(.init(stall: id, index: 0, time: time + 17_000_000, state: .running, frames: [0x10])))
                builder.add(.stallEnded(.init(id: id, end: time + 30_000_000)))
            }
        }
        let bytes = builder.bytes
        let serial = DecodedTrace(decoding: bytes, fileName: "big.swtrace")
        for chunks in [2, 3, 7] {
            let parallel = try #require(
                bytes.withUnsafeBytes { TraceLoader.decodeInChunks($0, fileName: "big.swtrace", chunks: chunks) })
            #expect(parallel.stalls == serial.stalls)
            #expect(parallel.stalls.count == 10)
            #expect(parallel.calloutCount == serial.calloutCount)
            #expect(parallel.calloutNanos == serial.calloutNanos)
            #expect(parallel.lastCalloutEnd == serial.lastCalloutEnd)
            #expect(parallel.outcome == serial.outcome)
        }
        // Damage: the chunked path refuses, and `decode` gives the serial result with its messages.
        var damaged = bytes
        damaged[bytes.count / 2] = 0
        let serialDamaged = DecodedTrace(decoding: damaged, fileName: "big.swtrace")
        let decoded = damaged.withUnsafeBytes { TraceLoader.decode($0, fileName: "big.swtrace", workers: 4) }
        #expect(decoded.outcome == serialDamaged.outcome)
        #expect(decoded.stalls == serialDamaged.stalls)
    }
}
