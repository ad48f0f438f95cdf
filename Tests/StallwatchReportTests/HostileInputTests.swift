// What a hostile trace or a damaged copy holds: names that would drive a terminal or forge a
// line, records repeated. None may change an exit status or print what the trace did not say
// (docs/cli.md, "Inputs and exit codes"). The files and streams a user names are the CLI's
// (StallwatchCLITests' FileAndStreamInputTests).
import Foundation
import StallwatchAnalysis
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct HostileInputTests {
    /// What a hostile trace puts in names: a forged line, a window-title and a clear-screen
    /// sequence, NUL, BEL, a right-to-left override, a folded-stack separator.
    static let forgedLine = "\nFAKE: PASS"
    static let title = "\u{1B}]0;owned\u{07}"
    static let clear = "\u{1B}[2J\u{1B}[8m"
    static let override = "\u{202E}fdp.exe"

    /// One compute stall whose process, callout label and file, mode, annotation and frames
    /// all hold control and bidirectional characters.
    static func hostileTrace() -> [UInt8] {
        var builder = TraceBuilder()
        let ms = Fixture.millisecond
        builder.add([
            .header(
                .init(
                    processName: "App" + title, pid: 9, wallClockStart: 0, clockBase: Fixture.clockBase,
                    mode: .stalls)),
            .module(.init(index: 1, loadAddress: 0x1000, path: "/opt/App" + clear)),
            .callSite(
                .init(id: 1, kind: .post, label: "reload" + forgedLine, file: "App/Feed" + override + ".swift", line: 3)
            ),
            .modeName(.init(id: 0, name: "default" + clear)),
            .annotation(.init(id: 1, annotation: Annotation(label: "scroll" + forgedLine + "\u{0}"))),
            .symbol(
                .init(address: 0x1100, module: 1, name: "App.hash" + forgedLine + ";x" + title, file: "App/H.swift")),
            .symbol(.init(address: 0x1200, module: 1, name: "App.main" + override)),
            .stallBegan(.init(id: 1, start: 1_000 * ms, site: 1, mode: 0, phase: .beforeSources, tier: .hitch)),
        ])
        for offset: UInt64 in [17, 40, 70] {
            builder.add(
                .sample(
                    .init(
                        stall: 1, index: offset, time: (1_000 + offset) * ms, state: .running, cpuTime: offset * ms,
                        annotation: 1,
                        frames: [0x1100, 0x1200])))
        }
        builder.add(.stallEnded(.init(id: 1, end: 1_090 * ms)))
        return builder.bytes
    }

    /// Scalars a terminal acts on, or that turn text around.
    static func controls(in text: String) -> [Unicode.Scalar] {
        text.unicodeScalars.filter {
            ($0.value < 0x20 && $0 != "\n") || (0x7F..<0xA0).contains($0.value) || $0 == "\u{202E}"
        }
    }

    @Test(arguments: [
        ["report", "-"], ["report", "-", "--wide", "--verbose"], ["show", "-"], ["show", "-", "--stall", "1"],
        ["show", "-", "--stall", "1", "--wide", "--verbose"], ["gate", "-", "--max-stalls", "0"],
    ])
    func namesFromATraceCannotDriveTheTerminal(arguments: [String]) {
        let run = CLIRun(arguments, input: Self.hostileTrace())
        #expect(run.exitCode == (arguments[0] == "gate" ? 1 : 0), "\(run.error)")
        #expect(Self.controls(in: run.output).isEmpty, "\(run.output)")
        #expect(!run.output.split(separator: "\n").contains { $0.hasPrefix("FAKE") }, "\(run.output)")
        if arguments[0] == "show" && arguments.count > 2 {
            // The names are there, escaped.
            #expect(run.output.contains("\\nFAKE: PASS"), "\(run.output)")
            #expect(run.output.contains("\\u{202E}"), "\(run.output)")
        }
    }

    @Test func colourKeepsOnlyStallwatchsOwnSequences() {
        let run = CLIRun(["report", "-", "--wide"], terminal: true, input: Self.hostileTrace())
        #expect(run.exitCode == 0)
        let own: Set<String> = ["\u{1B}[0m", "\u{1B}[1m", "\u{1B}[2m", "\u{1B}[31m", "\u{1B}[32m"]
        let scalars = Array(run.output.unicodeScalars)
        var styled = 0
        for (index, scalar) in scalars.enumerated() where scalar == "\u{1B}" {
            let sequence = String(String.UnicodeScalarView(scalars[index..<min(index + 4, scalars.count)]))
            let sequence3 = String(String.UnicodeScalarView(scalars[index..<min(index + 5, scalars.count)]))
            #expect(own.contains(sequence) || own.contains(sequence3), "\(sequence3.debugDescription)")
            styled += 1
        }
        #expect(styled > 0, "colour is on for a terminal")
        #expect(run.output.contains("\\u{1B}]0;owned\\u{7}"), "\(run.output)")
    }

    @Test func foldedStacksKeepOneStackALine() {
        let run = CLIRun(["export", "-", "--format", "folded", "-o", "-"], input: Self.hostileTrace())
        #expect(run.exitCode == 0, "\(run.error)")
        let lines = run.output.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == 1, "\(run.output.debugDescription)")
        for line in lines {
            let fields = line.split(separator: " ")
            #expect(Int(fields.last ?? "") != nil, "\(line)")
            // category;main;hash: three frames, whatever the names held.
            #expect(line.split(separator: ";").count == 3, "\(line)")
            #expect(Self.controls(in: String(line)).isEmpty, "\(line.debugDescription)")
        }
    }

    @Test func aFileNameCannotDriveTheTerminalEither() {
        let directory = TemporaryDirectory()
        let path = directory.write("bad" + Self.title + ".swtrace", Array("not a trace".utf8))
        let run = CLIRun(["report", path])
        #expect(run.exitCode == 2)
        #expect(Self.controls(in: run.error).isEmpty, "\(run.error.debugDescription)")
        #expect(run.error.contains("\\u{1B}]0;owned\\u{7}"), "\(run.error)")
    }

    // MARK: Repeated records

    /// `bytes`' records (sync markers included), each as its bytes.
    static func records(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var offsets: [Int] = []
        let outcome = bytes.withUnsafeBytes { buffer in
            TraceDecoder.decode(buffer) { _, offset in offsets.append(offset) }
        }
        precondition(outcome.endedCleanly)
        return zip(offsets, offsets.dropFirst() + [bytes.count]).map { bytes[$0..<$1] }
    }

    /// The report's figures a damaged copy could change.
    static func figures(_ json: String) throws -> [String] {
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let stalls = try #require(report["stalls"] as? [String: Any])
        let values = [
            report["runTimeSeconds"], report["hitchRatioMsPerSecond"], report["frames"], stalls["total"],
            stalls["totalMs"], stalls["categoryMs"],
        ]
        return try values.map {
            String(
                decoding: try JSONSerialization.data(
                    withJSONObject: $0 ?? NSNull(), options: [.sortedKeys, .fragmentsAllowed]), as: UTF8.self)
        }
    }

    @Test func everyRecordTwiceIsDamageAndAGateNeverPassesOnIt() throws {
        let original = Fixture.standard(mode: .full, withCallouts: true)
        let twice = Self.records(original).flatMap { Array($0) + Array($0) }
        let directory = TemporaryDirectory()
        let path = directory.write("twice.swtrace", TraceEncoder.preamble + twice)
        let report = CLIRun(["report", path, "--json"])
        #expect(report.exitCode == 2, "\(report.error)")
        #expect(report.error.contains("byte 20: sync marker 0 follows marker 0"), "\(report.error)")
        #expect(report.error.contains("records repeated, or two traces mixed"), "\(report.error)")
        #expect(report.error.contains("the trace's header again: records repeated"), "\(report.error)")
        #expect(report.error.contains("samples repeated"), "\(report.error)")
        // What can be told apart is counted once: the stalls, their samples and the summaries.
        let clean = try Self.figures(CLIRun(["report", "-", "--json"], input: original).output)
        let damaged = try Self.figures(report.output)
        #expect(damaged[1...] == clean[1...], "\(damaged) vs \(clean)")
        // The original fails this limit; its damaged copy must not pass it.
        let limit = ["--max-hitch-ratio", "10"]
        #expect(CLIRun(["gate", "-"] + limit, input: original).exitCode == 1)
        let gate = CLIRun(["gate", path] + limit)
        #expect(gate.exitCode == 2, "\(gate.output)\(gate.error)")
    }

    @Test func stallRecordsRepeatedLaterAreCountedOnce() throws {
        let original = Fixture.standard()
        let records = Self.records(original)
        // Every stall, sample and summary record again at the end, as a copy that wrote a
        // buffer twice leaves (no sync marker between: the repeat is in the records alone).
        let stallKinds: Set<UInt8> = [
            TraceRecordKind.stallBegan.rawValue, TraceRecordKind.sample.rawValue, TraceRecordKind.stallEnded.rawValue,
            TraceRecordKind.frameClock.rawValue, TraceRecordKind.latencyHistogram.rawValue,
        ]
        let again = records.filter { stallKinds.contains($0.first!) }.flatMap { Array($0) }
        let bytes = original + again
        let report = CLIRun(["report", "-", "--json"], input: bytes)
        #expect(report.exitCode == 2, "\(report.error)")
        #expect(
            report.error.contains(
                "records repeat earlier ones: 6 begun again (a stall id seen before), "
                    + "13 samples repeated (a stall, index and time seen before), 3 summaries over time already summarised;"
                    + " each counted once"), "\(report.error)")
        #expect(
            try Self.figures(report.output) == Self.figures(CLIRun(["report", "-", "--json"], input: original).output))
        // The parallel decoder (a large trace's path) finds the same.
        let decoded = bytes.withUnsafeBytes {
            TraceLoader.decodeInChunks($0, fileName: "t", chunks: 4)
        }
        #expect(decoded?.outcome.problems == DecodedTrace(decoding: bytes, fileName: "t").outcome.problems)
    }

    @Test func twoTracesJoinedAreNamedSo() throws {
        let first = Fixture.standard()
        let joined = first + Fixture.hitches(count: 3, duration: 40 * Fixture.millisecond)
        let report = CLIRun(["report", "-"], input: joined)
        #expect(report.exitCode == 2, "\(report.error)")
        #expect(
            report.error.contains(
                "-: byte \(first.count): a second trace starts here (its preamble): two trace files joined end to end;"
                    + " read on as one trace; split the file to read each"), "\(report.error)")
        #expect(report.error.contains("a second trace's header (Hitchy, pid 7): two traces joined"), "\(report.error)")
        // The file is named after the first trace's process, not the last's.
        #expect(CLIRun(["show", "-", "--json"], input: joined).exitCode == 2)
        let decoded = DecodedTrace(decoding: joined)
        #expect(decoded.header?.processName == "FixtureApp")
    }

    @Test func aCopyOfOneRecordingIsCountedOnce() throws {
        let directory = TemporaryDirectory()
        let trace = FleetFixture.trace(host: "a", version: "1", buildByte: 1, offset: 0, stalls: [(.parse, 60)])
        let first = directory.write("first.swtrace", trace)
        let copy = directory.write("copy.swtrace", trace)
        // Another recording: a different trace id, counted.
        let other = directory.write(
            "other.swtrace",
            FleetFixture.trace(host: "a", version: "1", buildByte: 1, offset: 5, stalls: [(.parse, 60)]))
        let run = CLIRun(["report", first, copy, other])
        #expect(run.exitCode == 0, "\(run.error)")
        #expect(
            run.error.hasPrefix("warning: \(copy) is a copy of \(first) (the same recording, trace id "), "\(run.error)"
        )
        #expect(run.error.hasSuffix("…); counted once\n"), "\(run.error)")
        #expect(run.output.contains("Stalls: 2,"), "\(run.output)")
    }
}
