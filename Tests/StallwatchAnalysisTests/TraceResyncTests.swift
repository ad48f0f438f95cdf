// Unknown record kinds are skipped; after a corrupt region decoding resumes at the next sync
// marker with every later record (callout times included) intact.

import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct TraceResyncTests {
    @Test func unknownKindsAreSkipped() {
        var bytes = TraceEncoder.preamble
        var encoder = TraceEncoder()
        let records = Array(TraceFixture.everyKind.prefix(4))
        encoder.append(records[0], to: &bytes)
        encoder.append(records[1], to: &bytes)
        bytes += [0x42, 0x03, 0xAA, 0xBB, 0xCC]  // kind 66, 3 bytes: a kind from a newer writer
        bytes += [0xC8, 0x00]  // kind 200 (reserved range), empty
        bytes += [0x50, 0x81, 0x01] + [UInt8](repeating: 0x07, count: 129)  // a two-byte length
        encoder.append(records[2], to: &bytes)
        encoder.append(records[3], to: &bytes)
        let decoded = decodeAll(bytes)
        #expect(decoded.outcome.endedCleanly)
        #expect(decoded.outcome.unknownRecordCount == 3)
        #expect(withoutSync(decoded.records) == records)
    }

    @Test(arguments: [0x00, 0xFF, 0x0B] as [UInt8])
    func resumesAtTheNextSyncMarker(filler: UInt8) {
        let records = TraceFixture.realistic(callouts: 600)
        let bytes = TraceFixture.encode(records, syncInterval: 256)
        let whole = decodeAll(bytes)
        // Damage 24 bytes starting at the record just past the middle.
        let victim = whole.offsets.firstIndex { $0 > bytes.count / 2 }!
        let damageStart = whole.offsets[victim]
        var damaged = bytes
        for index in damageStart..<(damageStart + 24) { damaged[index] = filler }

        let decoded = decodeAll(damaged, fileName: "damaged.swtrace")
        let nextSync = whole.offsets.indices.first {
            whole.offsets[$0] >= damageStart + 24 && whole.records[$0].kind == .sync
        }!
        #expect(Array(decoded.records.prefix(victim)) == Array(whole.records.prefix(victim)))
        #expect(decoded.records.suffix(whole.records.count - nextSync) == whole.records[nextSync...])
        #expect(decoded.outcome.truncation == nil)
        let regions = decoded.outcome.corruptRegions
        #expect(regions.count >= 1)
        #expect(regions.first?.offset ?? 0 >= damageStart)
        #expect(regions.allSatisfy { $0.resumed })
        #expect(regions.last.map { $0.offset + $0.skippedBytes } == whole.offsets[nextSync])
        #expect(regions.first!.description.contains("damaged.swtrace: byte \(regions.first!.offset): "))
        #expect(regions.first!.description.contains("to the next sync marker"))
    }

    @Test func corruptionWithNoLaterSyncSkipsToTheEnd() {
        let bytes = TraceFixture.encode(Array(TraceFixture.everyKind.prefix(6)))
        let whole = decodeAll(bytes)
        var damaged = bytes
        damaged[whole.offsets[4]] = 0
        let decoded = decodeAll(damaged)
        #expect(decoded.records == Array(whole.records.prefix(4)))
        let region = decoded.outcome.problems.first
        #expect(decoded.outcome.problems.count == 1)
        #expect(region?.problem == .reservedKind(0))
        #expect(region?.resumed == false)
        #expect(region?.skippedBytes == bytes.count - whole.offsets[4])
    }

    @Test func aLengthRunningIntoASyncMarkerIsCorruptionNotTruncation() {
        let bytes = TraceFixture.encode(TraceFixture.realistic(), syncInterval: 256)
        let whole = decodeAll(bytes)
        let victim = whole.records.indices.first {
            whole.records[$0].kind == .callout && whole.offsets[$0] > 1_000
        }!
        var damaged = bytes
        // A three-byte length of 1 MiB - 1: past the end of the input.
        damaged.replaceSubrange(
            (whole.offsets[victim] + 1)...(whole.offsets[victim] + 1), with: [0xFF, 0xFF, 0x3F])
        let decoded = decodeAll(damaged)
        #expect(decoded.outcome.truncation == nil)
        #expect(decoded.outcome.corruptRegions.first?.offset == whole.offsets[victim])
        #expect(decoded.records.last == whole.records.last)
    }

    @Test func notATraceIsSaidSo() {
        let text = Array("{\"stalls\": []}".utf8)
        let decoded = decodeAll(text, fileName: "report.json")
        #expect(decoded.records.isEmpty)
        #expect(decoded.outcome.problems.map(\.problem) == [.badPreamble])
        #expect(
            decoded.outcome.problems.first?.description
                == "report.json: byte 0: does not start with the trace magic \"SWTR\" and a version; "
                + "skipped the remaining 14 bytes (no sync marker after it)")
    }

    @Test func aNewerVersionIsRefused() {
        var bytes = TraceFixture.encode(TraceFixture.everyKind)
        bytes[4] = 3  // the first version newer than this reader's (2)
        let decoded = decodeAll(bytes, fileName: "new.swtrace")
        #expect(decoded.records.isEmpty)
        #expect(decoded.outcome.problems.map(\.problem) == [.unsupportedVersion(3)])
        #expect(
            decoded.outcome.problems.first?.description
                == "new.swtrace: byte 4: format version 3 is not supported (this reader knows 1...2); "
                + "nothing decoded")
    }

    @Test func aDamagedMagicStillDecodesFromTheFirstSync() {
        var bytes = TraceFixture.encode(TraceFixture.everyKind)
        bytes[0] = 0x00
        let decoded = decodeAll(bytes)
        #expect(decoded.outcome.problems.map(\.problem) == [.badPreamble])
        #expect(withoutSync(decoded.records) == TraceFixture.everyKind)
    }
}
