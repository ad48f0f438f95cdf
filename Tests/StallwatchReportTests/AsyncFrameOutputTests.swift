// A frame of async code reads the same in every output: named by its function (never "partial
// function"), marked ` [async]`; the awaiting callers from the context chain follow the stack's
// frames innermost first — in `show`, `report`, the page's data and every export.
import Foundation
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct AsyncFrameOutputTests {
    let directory = TemporaryDirectory()
    static let ms: UInt64 = 1_000_000

    /// One 300 ms hang whose samples block in `loadRows()` under three async layers.
    static func trace() -> [UInt8] {
        var builder = TraceBuilder()
        builder.add([
            .header(
                .init(
                    processName: "AsyncApp", pid: 77, wallClockStart: 1_700_000_000_000_000_000, clockBase: 1_000 * ms,
                    mode: .stalls, thresholds: .default, sampleInterval: .milliseconds(5))),
            .module(.init(index: 1, loadAddress: 0x1000, path: "/opt/app/AsyncApp")),
            .callSite(.init(id: 1, kind: .post, label: "pool", file: "AsyncApp/Pool.swift", line: 3)),
            .stallBegan(.init(id: 1, start: 1_200 * ms, site: 1, mode: 0, phase: .beforeSources, tier: .hang)),
        ])
        for offset: UInt64 in [20, 60, 100] {
            let time = 1_200 * ms + offset * ms
            builder.add([
                .sample(
                    .init(
                        stall: 1, index: offset, time: time, state: .running, cpuTime: offset * ms,
                        frames: [0x1100, 0x1200, 0x1300, 0x1400])),
                .sampleAsyncChain(.init(stall: 1, sample: offset, firstAsync: 2, end: .taskRoot)),
            ])
        }
        builder.add([
            .stallEnded(.init(id: 1, end: 1_500 * ms)),
            .symbol(.init(address: 0x1100, module: 1, name: "AsyncApp.Repository.loadRows() -> ()")),
            .symbol(
                .init(
                    address: 0x1200, module: 1,
                    name: "(1) suspend resume partial function for AsyncApp.Repository.rows() async -> Swift.Int")),
            .symbol(
                .init(
                    address: 0x1300, module: 1,
                    name: "(2) await resume partial function for AsyncApp.Service.fetch() async -> Swift.Int")),
            .symbol(
                .init(
                    address: 0x1400, module: 1,
                    name: "(2) await resume partial function for AsyncApp.Handler.handle() async throws -> ()")),
        ])
        return builder.bytes
    }

    static let chain = [
        "Repository.loadRows()", "Repository.rows() [async]", "Service.fetch() [async]", "Handler.handle() [async]",
    ]

    /// `text` names the four frames in order and has no runtime continuation names.
    func expectChain(_ text: String, _ what: String, innermostFirst: Bool = true) {
        let order = innermostFirst ? Self.chain : Self.chain.reversed()
        let positions = order.map { text.range(of: $0)?.lowerBound }
        #expect(positions.allSatisfy { $0 != nil }, "\(what) lacks a frame: \(text.prefix(2_000))")
        let found = positions.compactMap { $0 }
        #expect(found == found.sorted(), "\(what) out of order")
        #expect(!text.contains("partial function"), "\(what) has continuation names")
    }

    func run(_ arguments: [String]) -> String {
        let run = CLIRun(arguments)
        #expect(run.exitCode == 0, "\(arguments): \(run.error)")
        return run.output
    }

    @Test func showAndReportNameTheAwaitingCallersMarkedAsync() {
        let trace = directory.write("async.swtrace", Self.trace())
        let show = run(["show", trace, "--stall", "1"])
        expectChain(show, "show")
        #expect(show.contains("Handler.handle() [async]") && show.contains("(task root)"), "\(show)")
        let report = run(["report", trace])
        #expect(report.contains("[async]"), "\(report)")
        #expect(!report.contains("partial function"))
        let page = directory.path + "/report.html"
        _ = run(["report", trace, "--html", page])
        let html = directory.read("report.html") ?? ""
        // (The page keeps each frame's full demangled symbol too, for its tooltip, as `--verbose`.)
        for name in Self.chain { #expect(html.contains(name), "the page lacks \(name)") }
    }

    @Test(arguments: ["folded", "speedscope", "chrome", "jsonl", "otlp-json"])
    func exportsNameTheAwaitingCallersMarkedAsync(format: String) throws {
        let trace = directory.write("async.swtrace", Self.trace())
        let output = directory.path + "/out.\(format)"
        _ = run(["export", trace, "--format", format, "-o", output])
        let text = try #require(directory.read("out.\(format)"))
        // Folded stacks are outermost first; the rest list frames innermost first or by id.
        switch format {
        case "folded": expectChain(text, format, innermostFirst: false)
        default:
            for name in Self.chain { #expect(text.contains(name), "\(format) lacks \(name)") }
            #expect(!text.contains("partial function"), "\(format) has continuation names")
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/gzip"), "needs gzip"))
    func pprofNamesTheAwaitingCallersMarkedAsync() throws {
        let trace = directory.write("async.swtrace", Self.trace())
        let output = directory.path + "/out.pprof"
        _ = run(["export", trace, "--format", "pprof", "-o", output])
        // A gzip'ed profile.proto: its string table holds the function names as plain UTF-8.
        let unzipped = ExternalTools.run("/bin/sh", ["-c", "/usr/bin/gzip -dc \"$0\" > \"$0.raw\"", output])
        #expect(unzipped.status == 0)
        let data = try #require(FileManager.default.contents(atPath: output + ".raw"))
        let text = String(decoding: data, as: UTF8.self)
        for name in Self.chain { #expect(text.contains(name), "pprof lacks \(name)") }
        #expect(!text.contains("partial function"))
    }
}
