// A trace decoded in chunks between sync markers is exactly the trace decoded serially; a chunk
// that is not clean is refused, so damaged traces take the serial path.

import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct TraceChunkTests {
    /// Every field of a decoded trace, for comparing two.
    static func same(_ lhs: DecodedTrace, _ rhs: DecodedTrace) -> Bool {
        lhs.header == rhs.header && lhs.architecture == rhs.architecture && lhs.origin == rhs.origin
            && lhs.modules == rhs.modules && lhs.stalls == rhs.stalls && lhs.calloutCount == rhs.calloutCount
            && lhs.calloutNanos == rhs.calloutNanos && lhs.lastCalloutEnd == rhs.lastCalloutEnd
            && lhs.congestion == rhs.congestion && lhs.frameClock == rhs.frameClock
            && lhs.latencyHistograms == rhs.latencyHistograms && lhs.lostRecords == rhs.lostRecords
            && lhs.orphanSamples == rhs.orphanSamples && lhs.outcome == rhs.outcome
    }

    static func chunked(_ bytes: [UInt8], count: Int) -> DecodedTrace? {
        bytes.withUnsafeBytes { buffer in
            let starts = TraceChunk.boundaries(of: buffer, count: count)
            let ends = Array(starts.dropFirst()) + [buffer.count]
            var chunks: [TraceChunk] = []
            for (start, end) in zip(starts, ends) {
                guard let chunk = TraceChunk(decoding: buffer, from: start, to: end) else { return nil }
                chunks.append(chunk)
            }
            return DecodedTrace(chunks: chunks)
        }
    }

    static let origin = TraceFixture.everyKind.first { $0.kind == .origin }!

    @Test(arguments: [1, 2, 3, 5, 8, 40])
    func chunksGiveTheSerialTrace(count: Int) throws {
        let bytes = TraceFixture.encode([Self.origin] + TraceFixture.realistic(callouts: 2_000), syncInterval: 128)
        let serial = DecodedTrace(decoding: bytes)
        #expect(serial.outcome.endedCleanly)
        #expect(serial.origin?.host == "build-agent-7")
        let boundaries = bytes.withUnsafeBytes { TraceChunk.boundaries(of: $0, count: count) }
        #expect(boundaries.count == count, "a 20 KB trace with a marker every 128 bytes splits \(count) ways")
        #expect(zip(boundaries, boundaries.dropFirst()).allSatisfy { $0 < $1 })
        let parallel = try #require(Self.chunked(bytes, count: count))
        #expect(Self.same(serial, parallel))
    }

    @Test func aChunkThatDoesNotEndOnARecordIsRefused() {
        let bytes = TraceFixture.encode(TraceFixture.realistic(callouts: 500), syncInterval: 128)
        bytes.withUnsafeBytes { buffer in
            let starts = TraceChunk.boundaries(of: buffer, count: 4)
            #expect(TraceChunk(decoding: buffer, from: starts[1], to: starts[2]) != nil)
            #expect(TraceChunk(decoding: buffer, from: starts[1], to: starts[2] - 3) == nil)
            #expect(TraceChunk(decoding: buffer, from: starts[1] + 1, to: starts[2]) == nil)
        }
    }

    @Test func aDamagedChunkIsRefused() {
        var bytes = TraceFixture.encode(TraceFixture.realistic(callouts: 500), syncInterval: 128)
        let starts = bytes.withUnsafeBytes { TraceChunk.boundaries(of: $0, count: 4) }
        bytes[starts[2]] = 0  // kind 0 is never a kind: the serial decoder reports it, and resyncs
        #expect(!DecodedTrace(decoding: bytes).outcome.endedCleanly)
        #expect(Self.chunked(bytes, count: 4) == nil)
    }

    /// Traces written before the `origin` record existed read as before, without an origin.
    @Test func aTraceWithoutAnOriginStillReads() {
        let old = DecodedTrace(decoding: TraceFixture.encode(TraceFixture.realistic()))
        let new = DecodedTrace(decoding: TraceFixture.encode(TraceFixture.realistic() + [Self.origin]))
        #expect(old.outcome.endedCleanly)
        #expect(old.origin == nil)
        #expect(new.origin?.appVersion == "3.1.0")
        #expect(old.stalls == new.stalls)
    }
}
