// Every worked example in docs/trace-format.md is what the encoder really writes.

import Foundation
import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct TraceDocExamplesTests {
    /// One example per record kind, with the callout base the encoder starts from.
    static let examples: [(name: String, base: UInt64, record: TraceRecord)] = [
        (
            "header", 0,
            .header(
                .init(
                    processName: "FeedApp", pid: 4_242, wallClockStart: 1_767_225_600_000_000_000,
                    clockBase: 90_000_000_000, mode: .full, thresholds: .default,
                    sampleInterval: .milliseconds(10)))
        ),
        ("sync", 0, .sync(.init(sequence: 3, calloutBase: 90_000_500_000))),
        (
            "module", 0,
            .module(
                .init(
                    index: 1, loadAddress: 0x5610_4a40_0000, path: "/srv/FeedApp",
                    buildID: [0x3f, 0x9a, 0x01, 0xc4]))
        ),
        (
            "callSite", 0,
            .callSite(
                .init(
                    id: 3, kind: .timer, label: "refresh",
                    file: "FeedApp/Feed.swift", line: 42))
        ),
        ("modeName", 0, .modeName(.init(id: 1, name: "tracking"))),
        (
            "annotation", 0,
            .annotation(
                .init(
                    id: 2,
                    annotation: Annotation(
                        label: "feed.reload",
                        category: .database)))
        ),
        (
            "symbol", 0,
            .symbol(
                .init(
                    address: 0x5610_4a41_2340, module: 1,
                    name: "FeedApp.reload()", file: "Feed.swift", line: 57))
        ),
        (
            "stallBegan", 0,
            .stallBegan(
                .init(
                    id: 7, start: 90_000_000_000, site: 3, mode: 0,
                    phase: .beforeTimers, tier: .hitch))
        ),
        (
            "sample", 0,
            .sample(
                .init(
                    stall: 7, index: 2, tid: 4711, time: 90_020_000_000, state: .diskSleep, syscall: 74,
                    wchan: "jbd2", cpuTime: 1_250_000, annotation: 2,
                    frames: [0x7f3a_1c91_4a2b, 0x5610_4a41_2340, 0x5610_4a41_2000]))
        ),
        ("stallEnded", 0, .stallEnded(.init(id: 7, end: 90_135_000_000, flags: [.suspended]))),
        ("stallRetimed", 0, .stallRetimed(.init(id: 7, start: 89_997_000_000, end: 90_136_000_000))),
        (
            "stallContext", 0,
            .stallContext(.init(id: 7, expected: "splash", state: [.init(key: "screen", value: "Feed")]))
        ),
        (
            "callout", 90_000_500_000,
            .callout(
                .init(
                    site: 3, mode: 0, start: 90_000_502_000,
                    duration: 2_500))
        ),
        (
            "congestion", 0,
            .congestion(
                .init(
                    intervalStart: 90_000_000_000,
                    intervalLength: 1_000_000_000, count: 3))
        ),
        (
            "frameClock", 0,
            .frameClock(
                .init(
                    intervalStart: 90_000_000_000,
                    intervalLength: 1_000_000_000, expected: 60, delivered: 52, dropped: 8))
        ),
        (
            "latencyHistogram", 0,
            .latencyHistogram(
                .init(
                    intervalStart: 90_000_000_000,
                    intervalLength: 1_000_000_000,
                    buckets: [
                        .init(index: 0, count: 812), .init(index: 3, count: 95),
                        .init(index: 130, count: 2),
                    ]))
        ),
        ("lostRecords", 0, .lostRecords(.init(time: 90_200_000_000, count: 17))),
        ("recordedUntil", 0, .recordedUntil(time: 92_000_000_000)),
        ("stopped", 0, .stopped(from: 91_200_000_000, length: 3_000_000_000)),
        ("watched", 0, .watched(WatchedExecutor(label: "NIO-ELT-0-#1", how: "epoll", tid: 4711, since: 300_000_000))),
        (
            "sampleAsyncChain", 0,
            .sampleAsyncChain(.init(stall: 7, sample: 2, firstAsync: 3, end: .taskRoot))
        ),
        (
            "stallLeadUp", 0,
            .stallLeadUp(
                .init(
                    id: 7, window: 2_000_000_000, callouts: 130, busy: 412_000_000, lost: 0,
                    sites: [
                        .init(site: 3, count: 120, nanos: 380_000_000), .init(site: 1, count: 10, nanos: 32_000_000),
                    ],
                    recent: [
                        .init(site: 3, before: 40_000_000, duration: 18_000_000),
                        .init(site: 1, before: 12_000_000, duration: 3_000_000),
                    ]))
        ),
        ("platform", 0, .platform(.init(architecture: "x86_64"))),
        (
            "congestedIteration", 0,
            .congestedIteration(
                .init(
                    start: 90_100_000_000, duration: 21_000_000, callouts: 40,
                    sites: [.init(site: 3, count: 30, nanos: 15_000_000), .init(site: 1, count: 10, nanos: 5_500_000)]))
        ),
        ("sampleProvenance", 0, .sampleProvenance(.init(stall: 7, sample: 2, source: .perf))),
        (
            "sampleCounters", 0,
            .sampleCounters(
                .init(
                    stall: 3, sample: 5, counters: TraceDocExamplesTests.counters,
                    delta: TraceDocExamplesTests.counterDelta))
        ),
        (
            "sampleWait", 0,
            .sampleWait(
                .init(
                    stall: 3, sample: 5, kind: .file, operation: "read", fd: 7,
                    target: "/var/lib/app/feed.json"))
        ),
        (
            "origin", 0,
            .origin(
                .init(
                    traceID: [
                        0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36,
                    ], host: "web-3", executable: "/srv/FeedApp", buildID: [0x3f, 0x9a, 0x01, 0xc4],
                    appVersion: "1.4.2"))
        ),
    ]

    /// A thread 120 ms into its life, and what 5 ms of one long read() from disk added.
    static let counters = KernelCounters(values: [40_000_000, 80_000_000, 2_100, 3, 9_000, 400, 8_388_608, 0, 12, 4])
    static let counterDelta = KernelCounters(values: [0, 10_000_000, 0, 0, 0, 0, 2_097_152, 0, 0, 0])

    /// The record's bytes as the doc shows them: upper-case hex, space separated.
    static func hex(_ example: (name: String, base: UInt64, record: TraceRecord)) -> String {
        var encoder = TraceEncoder(calloutBase: example.base)
        var bytes: [UInt8] = []
        encoder.append(.sync(.init(sequence: 0, calloutBase: example.base)), to: &bytes)
        let syncSize = bytes.count
        encoder.append(example.record, to: &bytes)
        return bytes[syncSize...].map { String($0, radix: 16, uppercase: true) }
            .map { $0.count == 1 ? "0" + $0 : $0 }.joined(separator: " ")
    }

    static let doc: String? = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        return try? String(
            contentsOf: root.appendingPathComponent("docs/trace-format.md"), encoding: .utf8)
    }()

    @Test func everyKindHasAnExample() {
        #expect(Set(Self.examples.map(\.record.kind)) == Set(TraceRecordKind.allCases))
        #expect(Self.examples.allSatisfy { $0.name == $0.record.kind.name })
    }

    @Test(arguments: examples.indices)
    func exampleIsInTheDoc(index: Int) throws {
        let example = Self.examples[index]
        let doc = try #require(Self.doc)
        let hex = Self.hex(example)
        #expect(doc.contains("\n" + hex + "\n"), "docs/trace-format.md lacks \(example.name): \(hex)")
        // And the bytes decode back to the record.
        var bytes = TraceEncoder.preamble
        var encoder = TraceEncoder(calloutBase: example.base)
        encoder.append(.sync(.init(sequence: 0, calloutBase: example.base)), to: &bytes)
        encoder.append(example.record, to: &bytes)
        #expect(decodeAll(bytes).records.last == example.record)
    }

    /// The version 2 preamble (the format's version moved with the sample's thread and look).
    @Test func preambleIsInTheDoc() throws {
        #expect(try #require(Self.doc).contains("\n53 57 54 52 02 00 00 00\n"))
    }
}
