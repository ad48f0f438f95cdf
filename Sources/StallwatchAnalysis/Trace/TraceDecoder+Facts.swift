// The payloads of kinds 18 (sampleCounters) and 19 (sampleWait), read back; field order is the one
// docs/trace-format.md lists (TraceCoding+Facts.swift writes them).

import StallwatchCore

extension TraceParser {
    static func parseCounters(_ reader: inout TraceByteReader) throws(TraceFieldError)
        -> TraceRecord.SampleCounters
    {
        let stall = try reader.varint("stall")
        let sample = try reader.varint("sample")
        let flags = try reader.byte("flags")
        if flags > 1 { throw .outOfRange("flags", UInt64(flags)) }
        func counters() throws(TraceFieldError) -> KernelCounters {
            var values: [UInt64] = []
            for _ in KernelCounter.allCases { values.append(try reader.varint("counters")) }
            return KernelCounters(values: values)
        }
        let reading = try counters()
        let delta = flags == 1 ? try counters() : nil
        return .init(stall: stall, sample: sample, counters: reading, delta: delta)
    }

    static func parseWait(_ reader: inout TraceByteReader) throws(TraceFieldError) -> TraceRecord.SampleWait {
        let stall = try reader.varint("stall")
        let sample = try reader.varint("sample")
        let kind = try reader.code(WaitFact.Kind.self, "kind")
        let flags = try reader.byte("flags")
        if flags & ~0b111 != 0 { throw .outOfRange("flags", UInt64(flags)) }
        func int32(_ field: StaticString) throws(TraceFieldError) -> Int32 {
            let raw = try reader.varint(field)
            guard let value = Int32(exactly: unzigzag(raw)) else { throw .outOfRange(field, raw) }
            return value
        }
        let fd = flags & 1 != 0 ? try int32("fd") : nil
        let address = flags & 2 != 0 ? try reader.varint("address") : nil
        let owner = flags & 4 != 0 ? try int32("ownerTID") : nil
        let operation = try reader.optionalString("operation")
        let target = try reader.optionalString("target")
        let ownerName = try reader.optionalString("ownerName")
        let statement = try reader.optionalString("statement")
        let count = try reader.varint("frameCount")
        guard count <= UInt64(min(TraceFormat.maxFrames, reader.end - reader.position)) else {
            throw .outOfRange("frameCount", count)
        }
        var frames: [UInt64] = []
        frames.reserveCapacity(Int(count))
        try readFrames(&reader, count: Int(count), into: &frames)
        return .init(
            stall: stall, sample: sample, kind: kind, operation: operation, fd: fd, target: target, address: address,
            ownerTID: owner, ownerName: ownerName, ownerFrames: frames, statement: statement)
    }
}
