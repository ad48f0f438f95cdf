// Every record kind decodes to exactly what was encoded, through every encoder entry point.

import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

/// Traces built with `TraceEncoder`, shared by the trace tests.
enum TraceFixture {
    static let header = TraceRecord.Header(
        processName: "FeedApp", pid: 48_213, wallClockStart: 1_767_225_600_123_456_789,
        clockBase: 81_234_567_890_123, mode: .full,
        thresholds: TierThresholds(), sampleInterval: .milliseconds(10))

    static let appBase: UInt64 = 0x5610_4a40_0000
    static let libcBase: UInt64 = 0x7f3a_1c80_0000

    /// One record of every kind, with values that exercise every field form (optional strings
    /// present and absent, a payload over 127 bytes, negative deltas).
    static let everyKind: [TraceRecord] = [
        .header(header),
        .module(
            .init(
                index: 1, loadAddress: appBase, path: "/srv/feed/.build/release/FeedApp",
                buildID: [0x3f, 0x9a, 0x01, 0xc4, 0x55, 0x10, 0xee, 0x7b])),
        .module(.init(index: 2, loadAddress: libcBase, path: "/usr/lib/x86_64-linux-gnu/libc.so.6")),
        .callSite(.init(id: 1, kind: .timer, label: "feed.refresh", file: "FeedApp/Feed.swift", line: 42)),
        .callSite(.init(id: 2, kind: .post, file: "FeedApp/Images.swift", line: 310)),
        .modeName(.init(id: 0, name: "default")),
        .modeName(.init(id: 1, name: "tracking")),
        .annotation(.init(id: 1, annotation: Annotation(label: "feed.reload", category: .database))),
        .annotation(.init(id: 2, annotation: Annotation(label: "thumbnails"))),
        .symbol(
            .init(
                address: appBase + 0x1_2340, module: 1,
                name: "FeedApp.FeedController.reload() -> ()", file: "FeedApp/Feed.swift", line: 57)),
        .symbol(.init(address: libcBase + 0x11_4a2b, module: 2, name: "fsync")),
        .symbol(.init(address: 0x7ffd_0000_1000, name: nil)),
        .symbol(
            .init(
                address: appBase + 0x9_9999, module: 1,
                name: "closure #1 " + String(repeating: "(Swift.Array<Swift.String>) ", count: 8))),
        .stallBegan(
            .init(
                id: 7, start: 81_234_600_000_000, site: 1, mode: 0, phase: .beforeTimers,
                tier: .hitch)),
        .sample(
            .init(
                stall: 7, index: 0, tid: 4_211, time: 81_234_610_000_000, state: .diskSleep, syscall: 74,
                wchan: "jbd2_log_wait_commit", cpuTime: 1_250_000_000, annotation: 1,
                frames: [libcBase + 0x11_4a2b, appBase + 0x1_2340, appBase + 0x9_9999, 0x7ffd_0000_1000])),
        .sample(
            .init(
                stall: 7, index: 1, tid: 4_211, look: 1, time: 81_234_620_000_000, state: .running,
                cpuTime: 1_260_000_000,
                captureTimedOut: true)),
        .sample(.init(stall: 7, index: 2, time: 81_234_630_000_000, state: .sleeping, syscall: -1)),
        .stallEnded(.init(id: 7, end: 81_234_735_000_000, flags: [.suspended])),
        .callout(.init(site: 1, mode: 0, start: 81_234_800_000_000, duration: 12_345)),
        .callout(.init(site: 2, mode: 1, start: 81_234_800_020_000, duration: 3_000)),
        // Starts before the previous one ended: a nested callout written after its inner one.
        .callout(.init(site: 1, mode: 0, start: 81_234_799_990_000, duration: 40_000)),
        .congestion(.init(intervalStart: 81_234_000_000_000, intervalLength: 1_000_000_000, count: 3)),
        .frameClock(
            .init(
                intervalStart: 81_234_000_000_000, intervalLength: 1_000_000_000,
                expected: 60, delivered: 52, dropped: 8)),
        .latencyHistogram(
            .init(
                intervalStart: 81_234_000_000_000, intervalLength: 1_000_000_000,
                buckets: [
                    .init(index: 0, count: 812), .init(index: 3, count: 95),
                    .init(index: 250, count: 2), .init(index: UInt16(LatencyBuckets.count - 1), count: 1),
                ])),
        .lostRecords(.init(time: 81_234_900_000_000, count: 17)),
        // Last, so the slices `realistic()` takes keep their records.
        .platform(.init(architecture: "x86_64")),
        .origin(
            .init(
                traceID: Array(0..<16), host: "build-agent-7", executable: "/srv/FeedApp",
                buildID: [0xde, 0xad, 0xbe, 0xef], appVersion: "3.1.0")),
        .congestedIteration(
            .init(
                start: 81_234_500_000_000, duration: 21_000_000, callouts: 40,
                sites: [.init(site: 3, count: 30, nanos: 15_000_000), .init(site: 1, count: 10, nanos: 5_500_000)])),
        // The first sample of stall 7 (in state D, inside fsync) came from the stack scan.
        .sampleProvenance(.init(stall: 7, sample: 0, source: .scan)),
        // The sample facts (kinds 18, 19) after it, for the same reason.
        .sampleCounters(
            .init(
                stall: 1, sample: 0, counters: KernelCounters(values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
                delta: KernelCounters(values: [0, 10_000_000, 0, 1, 0, 0, 4096, 0, 0, 0]))),
        .sampleWait(
            .init(
                stall: 1, sample: 0, kind: .mutex, operation: "futex", address: 0x7F00_1234_5678,
                ownerTID: 4711, ownerName: "cache-refresh", ownerFrames: [0x5555_0000_1000, 0x5555_0000_0F00])),
        // Stall 8 (unfinished in `realistic()`) as its executor timed it: ignored until it ends.
        .stallRetimed(.init(id: 8, start: 81_300_000_000_000, end: 81_300_900_000_000)),
        .stallContext(
            .init(
                id: 7, expected: nil,
                state: [.init(key: "screen", value: "Feed"), .init(key: "scrolling", value: "true")])),
        .recordedUntil(time: 81_235_000_000_000),
        .stallLeadUp(
            .init(
                id: 7, window: 2_000_000_000, callouts: 40, busy: 90_000_000, lost: 3,
                sites: [.init(site: 1, count: 40, nanos: 90_000_000)],
                recent: [.init(site: 1, before: 5_000_000, duration: 2_000_000)])),
        .stopped(from: 81_234_700_000_000, length: 250_000_000),
        .sampleAsyncChain(.init(stall: 7, sample: 0, firstAsync: 1, end: .unreadable)),
        .watched(WatchedExecutor(label: "main-queue", how: "heartbeat", tid: 812, since: 81_234_000_000_000)),
    ]

    /// A preamble and `records`, encoded with one encoder.
    static func encode(_ records: [TraceRecord], syncInterval: Int = 4_096) -> [UInt8] {
        var bytes = TraceEncoder.preamble
        var encoder = TraceEncoder(syncInterval: syncInterval)
        for record in records { encoder.append(record, to: &bytes) }
        return bytes
    }

    /// A few KB of trace with every kind: definitions, two stalls (one unfinished), a run of
    /// callouts, summaries, and symbols at the end as a recorder writes them.
    static func realistic(callouts: Int = 240, seed: UInt64 = 1, syncInterval: Int = 512)
        -> [TraceRecord]
    {
        var random = SplitMix64(seed: seed)
        var records = Array(everyKind.prefix(9))
        var time: UInt64 = 81_300_000_000_000
        for index in 0..<callouts {
            time += random.next(below: 40_000)
            let duration = 1_000 + random.next(below: 60_000)
            records.append(
                .callout(
                    .init(
                        site: 1 + random.next(below: 2), mode: UInt16(index % 7 == 0 ? 1 : 0),
                        start: time, duration: duration)))
            time += duration
            if index == callouts / 3 {
                records.append(contentsOf: Array(everyKind[13...17]))
                records.append(.congestion(.init(intervalStart: time, intervalLength: 1_000_000_000, count: 2)))
            }
            if index == callouts / 2 {
                records.append(
                    .stallBegan(
                        .init(
                            id: 8, start: time, site: 2, mode: 1, phase: .beforeSources,
                            tier: .hitch)))
                records.append(
                    .sample(
                        .init(
                            stall: 8, index: 0, time: time + 20_000_000, state: .running,
                            cpuTime: 2_000_000_000, annotation: 2, frames: [appBase + 0x9_9999, appBase + 0x1_2340])))
            }
        }
        // Without the origin, the congested iteration, the sample facts, the retime, the context
        // and the recording's time: the damage tests depend on where sync markers fall.
        records.append(
            contentsOf: everyKind[21...].filter {
                ![
                    .origin, .congestedIteration, .sampleCounters, .sampleWait, .stallRetimed, .stallContext,
                    .recordedUntil, .stallLeadUp, .stopped, .sampleAsyncChain, .watched,
                ].contains(
                    $0.kind)
            })
        records.append(contentsOf: Array(everyKind[9...12]))
        return records
    }
}

/// A seedable generator (SplitMix64) so random tests repeat exactly.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next(below bound: UInt64) -> UInt64 { next() % bound }
}

/// All records of `bytes`, with their offsets, and the outcome.
func decodeAll(_ bytes: [UInt8], fileName: String? = nil)
    -> (records: [TraceRecord], offsets: [Int], outcome: TraceOutcome)
{
    var records: [TraceRecord] = []
    var offsets: [Int] = []
    let outcome = bytes.withUnsafeBytes { buffer in
        TraceDecoder.decode(buffer, fileName: fileName) { record, offset in
            records.append(record)
            offsets.append(offset)
        }
    }
    return (records, offsets, outcome)
}

func withoutSync(_ records: [TraceRecord]) -> [TraceRecord] {
    records.filter { $0.kind != .sync }
}

@Suite struct TraceRoundTripTests {
    @Test func everyKindIsInTheFixture() {
        let kinds = Set(TraceFixture.everyKind.map(\.kind))
        #expect(kinds == Set(TraceRecordKind.allCases).subtracting([.sync]))
    }

    @Test(arguments: [64, 4_096])
    func everyKindRoundTrips(syncInterval: Int) {
        let bytes = TraceFixture.encode(TraceFixture.everyKind, syncInterval: syncInterval)
        let decoded = decodeAll(bytes)
        #expect(decoded.outcome.endedCleanly)
        #expect(decoded.outcome.unknownRecordCount == 0)
        #expect(withoutSync(decoded.records) == TraceFixture.everyKind)
        #expect(decoded.records.first?.kind == .sync)
        if syncInterval == 64 { #expect(decoded.records.count(where: { $0.kind == .sync }) > 3) }
    }

    @Test func iteratorAndClosureAgree() {
        let bytes = TraceFixture.encode(TraceFixture.realistic())
        var decoder = TraceDecoder(bytes, fileName: "feed.swtrace")
        var records: [TraceRecord] = []
        var offsets: [Int] = []
        while let record = decoder.next() {
            records.append(record)
            offsets.append(decoder.recordOffset)
        }
        let decoded = decodeAll(bytes)
        #expect(records == decoded.records)
        #expect(offsets == decoded.offsets)
        #expect(decoder.outcome == decoded.outcome)
        #expect(decoder.outcome.recordCount == records.count)
        #expect(withoutSync(records) == TraceFixture.realistic())
    }

    @Test func syncRecordsCarryTheCalloutBase() {
        let bytes = TraceFixture.encode(TraceFixture.realistic(), syncInterval: 64)
        var previousEnd: UInt64?
        for record in decodeAll(bytes).records {
            switch record {
            case .sync(let sync):
                if let previousEnd { #expect(sync.calloutBase == previousEnd) }
            case .callout(let callout): previousEnd = callout.start + callout.duration
            default: break
            }
        }
        #expect(previousEnd != nil)
    }

    @Test func hotEncodersWriteIntoCallerMemory() {
        var encoder = TraceEncoder()
        var bytes = TraceEncoder.preamble + [UInt8](repeating: 0, count: 256)
        var used = TraceEncoder.preamble.count
        let frames: [UInt64] = [0x7f3a_1c91_4a2b, 0x5610_4a41_2340]
        bytes.withUnsafeMutableBytes { buffer in
            used += encoder.encodeCallout(
                site: 3, mode: 0, start: 1_000_000, duration: 2_500,
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[used...]))
            let wchan: StaticString = "futex_wait_queue"
            frames.withUnsafeBufferPointer { frames in
                used += encoder.encodeSample(
                    stall: 1, index: 3, tid: 77, look: 2, time: 1_004_000, state: .sleeping, syscall: 202,
                    wchan: UnsafeRawBufferPointer(start: wchan.utf8Start, count: wchan.utf8CodeUnitCount),
                    cpuTime: 9, annotation: 0, captureTimedOut: false, frames: frames,
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[used...]))
            }
        }
        let decoded = decodeAll(Array(bytes[..<used]))
        #expect(decoded.outcome.endedCleanly)
        #expect(
            withoutSync(decoded.records) == [
                .callout(.init(site: 3, mode: 0, start: 1_000_000, duration: 2_500)),
                .sample(
                    .init(
                        stall: 1, index: 3, tid: 77, look: 2, time: 1_004_000, state: .sleeping, syscall: 202,
                        wchan: "futex_wait_queue", cpuTime: 9, frames: frames)),
            ])
    }

    @Test func aRecordThatDoesNotFitIsNotWrittenAndChangesNothing() {
        var encoder = TraceEncoder()
        var small = [UInt8](repeating: 0xEE, count: 12)
        let written = small.withUnsafeMutableBytes {
            encoder.encodeCallout(site: 1, mode: 0, start: 5_000_000_000, duration: 10, into: $0)
        }
        #expect(written == 0)
        #expect(encoder.calloutBase == 0)
        // The sync still due and the base unchanged: the next record decodes as if none was tried.
        var bytes = TraceEncoder.preamble
        encoder.append(.callout(.init(site: 1, mode: 0, start: 7, duration: 1)), to: &bytes)
        #expect(decodeAll(bytes).records.map(\.kind) == [.sync, .callout])
    }

    @Test func longStringsAreCutAtACharacterBoundary() {
        let label = String(repeating: "é", count: 40_000)  // 80,000 bytes
        let bytes = TraceFixture.encode([.modeName(.init(id: 9, name: label))])
        guard case .modeName(let mode) = withoutSync(decodeAll(bytes).records).first else {
            Issue.record("no mode record")
            return
        }
        #expect(mode.name.utf8.count == TraceFormat.maxStringBytes - 1)
        #expect(mode.name == String(repeating: "é", count: (TraceFormat.maxStringBytes - 1) / 2))
    }

    /// Version 2 since samples carry their index, thread and look (docs/trace-format.md);
    /// version 1 traces still read (`TraceVersion1Tests`).
    @Test func preambleIsMagicVersionAndZeros() {
        #expect(TraceEncoder.preamble == [0x53, 0x57, 0x54, 0x52, 0x02, 0x00, 0x00, 0x00])
        #expect(TraceFormat.version == 2)
        #expect(TraceRecordKind.allCases.map(\.rawValue).max()! + 1 == TraceRecordKind.nextID)
        for kind in TraceRecordKind.allCases {
            #expect(!TraceRecordKind.reservedIDs.contains { $0.contains(kind.rawValue) })
        }
    }
}
