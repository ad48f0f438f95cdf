// A version 1 trace, stored as the version 1 encoder wrote it, decodes to the stalls and
// sample weights the version 1 decoder made of it: one look per group of samples stamped less
// than a microsecond apart, threads unknown, side records joined to their samples.

import Foundation
import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct TraceVersion1Tests {
    /// What the version 1 decoder made of the stored trace (`Fixtures/v1-pool.expected.json`).
    struct Expected: Decodable {
        var stalls: [Stall]
        var weights: [[UInt64]]
        var orphans: Int
        var problems: Int
    }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func load() throws -> (bytes: [UInt8], expected: Expected) {
        let bytes = [UInt8](try Data(contentsOf: fixtures.appendingPathComponent("v1-pool.swtrace")))
        let json = try Data(contentsOf: fixtures.appendingPathComponent("v1-pool.expected.json"))
        return (bytes, try JSONDecoder().decode(Expected.self, from: json))
    }

    @Test func theStoredTraceIsVersion1() throws {
        let (bytes, _) = try Self.load()
        #expect(bytes[4] == 1 && bytes[5] == 0)
    }

    @Test func stallsSamplesAndWeightsComeOutAsBefore() throws {
        let (bytes, expected) = try Self.load()
        let trace = DecodedTrace(decoding: bytes, fileName: "v1-pool.swtrace")
        #expect(trace.outcome.problems.count == expected.problems)
        #expect(trace.orphanSamples == expected.orphans)
        let stalls = trace.stalls
        // The same stalls and samples, side records joined as before; only the looks are new.
        let withoutLooks = stalls.map { stall in
            var stall = stall
            for index in stall.samples.indices { stall.samples[index].look = nil }
            return stall
        }
        #expect(withoutLooks == expected.stalls)
        #expect(stalls.map(StallAccounting.sampleWeights) == expected.weights)
        #expect(stalls.allSatisfy { $0.samples.allSatisfy { $0.tid == 0 } })
    }

    @Test func samplesStampedWithinAMicrosecondAreOneLook() throws {
        let (bytes, _) = try Self.load()
        let stalls = DecodedTrace(decoding: bytes).stalls
        #expect(stalls.map { $0.samples.map(\.look) } == [[0, 1, 2, 3], [0, 0, 0, 1, 1, 1, 2, 2, 2], [0, 0]])
        // The lock wait of each look's second thread, joined by its time in version 1.
        let owners = stalls[1].samples.map { $0.wait?.owner?.tid }
        #expect(owners == [nil, 4250, nil, nil, 4251, nil, nil, 4252, nil])
    }

    @Test func aVersion1TraceIsNotSplitIntoChunks() throws {
        let (bytes, _) = try Self.load()
        let chunk = bytes.withUnsafeBytes { TraceChunk(decoding: $0, from: TraceFormat.preambleSize, to: $0.count) }
        #expect(chunk == nil)
    }
}
