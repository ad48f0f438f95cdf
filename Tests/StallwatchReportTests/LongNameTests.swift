// A frame's name is cut to `FrameNamer.nameLimit` bytes with a visible mark, in every output: a
// megabyte-long symbol makes no export, page or report grow with it.
import Foundation
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct LongNameTests {
    let directory = TemporaryDirectory()
    static let huge = "huge_" + String(repeating: "x", count: 1 << 20)
    /// A trace holds the first `TraceFormat.maxStringBytes` of it.
    static let mark = "…[cut \(TraceFormat.maxStringBytes - FrameNamer.nameLimit) bytes]"
    /// Four of the names as the trace holds them: twelve samples carry it (as a frame and as
    /// their reason), and each stall's signature and representative stack, so an output with
    /// the name uncut is several times this.
    static let bound = 4 * TraceFormat.maxStringBytes

    /// Three stalls of four samples each, in a full-mode trace with callouts, every sample's
    /// innermost frame the megabyte-long symbol.
    static func trace() -> [UInt8] {
        let ms = Fixture.millisecond
        var builder = TraceBuilder()
        builder.add([
            .header(
                .init(
                    processName: "LongNames", pid: 77, wallClockStart: 1_700_000_000 * Fixture.second,
                    clockBase: Fixture.clockBase, mode: .full, thresholds: .default, sampleInterval: .milliseconds(5))),
            .module(.init(index: 1, loadAddress: 0x1000, path: "/opt/long/LongNames")),
            .callSite(.init(id: 1, kind: .post, file: "LongNames/main.swift", line: 3)),
            .modeName(.init(id: 0, name: "default")),
            .symbol(.init(address: 0x1100, module: 1, name: huge, file: "LongNames/Huge.swift", line: 9)),
            .symbol(.init(address: 0x1200, module: 1, name: "LongNames.main()", file: "LongNames/main.swift", line: 1)),
        ])
        for id in UInt64(1)...3 {
            let start = Fixture.clockBase + id * 200 * ms
            builder.add(.stallBegan(.init(id: id, start: start, site: 1, mode: 0, phase: .beforeSources, tier: .hitch)))
            for offset: UInt64 in [17, 30, 45, 60] {
                builder.add(
                    .sample(
                        .init(
                            stall: id, index: offset, time: start + offset * ms, state: .running, cpuTime: offset * ms,
                            frames: [0x1100, 0x1200])))
            }
            builder.add(.stallEnded(.init(id: id, end: start + 70 * ms)))
            builder.add(.callout(.init(site: 1, mode: 0, start: start, duration: 70 * ms)))
        }
        return builder.bytes
    }

    @Test(arguments: ["chrome", "folded", "speedscope", "jsonl", "otlp-json"])
    func everyExportCarriesTheCutNameAndStaysSmall(format: String) throws {
        let trace = directory.write("long.swtrace", Self.trace())
        let output = directory.path + "/out.\(format)"
        let extra = format == "jsonl" ? ["--samples"] : format == "otlp-json" ? ["--callouts"] : []
        let run = CLIRun(["export", trace, "--format", format, "-o", output] + extra)
        #expect(run.exitCode == 0, "\(run.error)")
        let text = try #require(directory.read("out.\(format)"))
        #expect(text.contains(Self.mark), "\(Self.found(text))")
        #expect(text.utf8.count < Self.bound, "\(text.utf8.count) bytes")
    }

    /// What the text has where a mark would be, for a failure's message.
    static func found(_ text: String) -> String {
        text.range(of: "[cut").map { String(text[$0.lowerBound...].prefix(40)) } ?? "no mark"
    }

    @Test func pprofCarriesTheCutName() throws {
        let loaded = try TraceLoader.load(bytes: Self.trace(), path: "long.swtrace").get()
        let stalls = ReportBuilder().analyze([loaded])[0]
        let profile = PprofExporter.profile([JSONLinesExporter.Input(trace: loaded, stalls: stalls)])
        #expect(String(decoding: profile, as: UTF8.self).contains(Self.mark))
        #expect(profile.count < Self.bound, "\(profile.count) bytes")
    }

    @Test(arguments: [["--html", "page.html"], ["--json"], ["--verbose", "--wide"]])
    func theReportAndThePageCarryTheCutName(options: [String]) throws {
        let trace = directory.write("long.swtrace", Self.trace())
        let arguments = options.map { $0 == "page.html" ? directory.path + "/page.html" : $0 }
        let run = CLIRun(["report", trace] + arguments)
        #expect(run.exitCode == 0, "\(run.error)")
        let text = options.first == "--html" ? try #require(directory.read("page.html")) : run.output
        #expect(text.contains(Self.mark))
        #expect(text.utf8.count < Self.bound, "\(text.utf8.count) bytes")
    }

    @Test func aNameIsCutAtACharacterBoundaryWithinTheLimit() {
        // "é" is two bytes: the limit falls inside the one that straddles it.
        let name = String(repeating: "a", count: FrameNamer.nameLimit - 1) + String(repeating: "é", count: 10)
        let cut = FrameNamer.cut(name)
        #expect(cut == String(repeating: "a", count: FrameNamer.nameLimit - 1) + "…[cut 20 bytes]")
        #expect(FrameNamer.cut("short") == "short")
        let exact = String(repeating: "b", count: FrameNamer.nameLimit)
        #expect(FrameNamer.cut(exact) == exact)
    }
}
