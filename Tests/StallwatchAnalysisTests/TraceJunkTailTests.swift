// Bytes after the last whole record that hold no sync marker and no whole record are a junk
// tail: a truncation (every record before it decoded), not corruption; damage that a sync
// marker or whole records follow stays corrupt.

import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct TraceJunkTailTests {
    let bytes = TraceFixture.encode(TraceFixture.realistic(), syncInterval: 256)

    @Test(arguments: [1, 7, 512, 65_536])
    func aZeroFilledTailIsATruncation(length: Int) throws {
        let whole = decodeAll(bytes)
        let decoded = decodeAll(bytes + [UInt8](repeating: 0, count: length), fileName: "zero.swtrace")
        #expect(decoded.records == whole.records)
        #expect(decoded.outcome.corruptRegions.isEmpty)
        let truncation = try #require(decoded.outcome.truncation)
        #expect(truncation.problem == .junkTail(zeroFilled: true))
        #expect(truncation.offset == bytes.count)
        #expect(truncation.skippedBytes == length)
        #expect(
            truncation.description
                == "zero.swtrace: byte \(bytes.count): the input ends in zero-filled bytes, not records "
                + "(as a crash or power loss leaves); ignored the last \(length) bytes")
    }

    @Test func aRecordCutShortThenZeroFilledIsATruncation() throws {
        let whole = decodeAll(bytes)
        // The last record half written, the rest of its page zero: what a power loss leaves.
        let last = try #require(whole.offsets.last)
        var torn = Array(bytes[..<(last + (bytes.count - last) / 2)])
        torn += [UInt8](repeating: 0, count: 4_096 - torn.count % 4_096)
        let decoded = decodeAll(torn)
        // Zeros can complete a record validly (an empty string, a zero field): no checksum
        // tells. Either way the records before the torn one are intact and nothing is corrupt.
        #expect(Array(decoded.records.prefix(whole.records.count - 1)) == Array(whole.records.dropLast()))
        #expect(decoded.records.count <= whole.records.count)
        #expect(decoded.outcome.corruptRegions.isEmpty)
        #expect(decoded.outcome.truncation?.offset ?? 0 >= last)
    }

    @Test(arguments: 1...64 as ClosedRange<UInt64>)
    func aRandomTailIsATruncation(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let length = 1 + Int(random.next(below: 8_192))
        let junk = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        let whole = decodeAll(bytes)
        let decoded = decodeAll(bytes + junk, fileName: "random.swtrace")
        // Junk may frame as records of unknown kinds before the decoder gives up; nothing is lost.
        #expect(Array(decoded.records.prefix(whole.records.count)) == whole.records)
        #expect(decoded.outcome.corruptRegions.isEmpty, "\(decoded.outcome.problems)")
        let truncation = try #require(decoded.outcome.truncation)
        #expect(truncation.offset >= bytes.count)
        #expect(truncation.description.hasPrefix("random.swtrace: byte \(truncation.offset): the input ends"))
    }

    @Test func damageFollowedByASyncMarkerIsStillCorrupt() throws {
        let whole = decodeAll(bytes)
        let victim = try #require(whole.offsets.firstIndex { $0 > bytes.count / 2 })
        var damaged = bytes
        for index in whole.offsets[victim]..<(whole.offsets[victim] + 40) { damaged[index] = 0 }
        // A junk tail after it too: the hole is corrupt, the tail a truncation.
        let decoded = decodeAll(damaged + [UInt8](repeating: 0, count: 100))
        #expect(decoded.outcome.corruptRegions.count == 1)
        #expect(decoded.outcome.corruptRegions.first?.resumed == true)
        #expect(decoded.outcome.corruptRegions.first?.offset == whole.offsets[victim])
        #expect(decoded.outcome.truncation?.problem == .junkTail(zeroFilled: true))
        #expect(decoded.records.last == whole.records.last)
    }

    @Test func damageFollowedByWholeRecordsWithoutASyncMarkerIsStillCorrupt() throws {
        // One sync marker, at the start: whatever follows the damage, no marker does.
        let bytes = TraceFixture.encode(TraceFixture.realistic(), syncInterval: 1 << 20)
        let whole = decodeAll(bytes)
        let lastSync = try #require(whole.records.lastIndex { $0.kind == .sync })
        // A callout after the last sync marker, its payload overwritten, intact records after it.
        let victim = try #require(
            whole.records.indices.first {
                $0 > lastSync && $0 + 2 < whole.records.count && whole.records[$0].kind == .callout
            })
        var damaged = bytes
        for index in (whole.offsets[victim] + 2)..<whole.offsets[victim + 1] { damaged[index] = 0xFF }
        let decoded = decodeAll(damaged)
        #expect(decoded.outcome.truncation == nil)
        #expect(decoded.outcome.corruptRegions.count == 1)
        #expect(decoded.outcome.corruptRegions.first?.offset == whole.offsets[victim])
        #expect(decoded.outcome.corruptRegions.first?.resumed == false)
    }

    @Test func zeroesRightAfterThePreambleLeaveNoRecord() {
        let decoded = decodeAll(TraceEncoder.preamble + [UInt8](repeating: 0, count: 64))
        #expect(decoded.records.isEmpty)
        #expect(decoded.outcome.truncation?.offset == TraceFormat.preambleSize)
    }
}
