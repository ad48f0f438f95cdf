// The payloads of kinds 18 (sampleCounters) and 19 (sampleWait); field order is the one
// docs/trace-format.md lists.

extension TraceEncoder {
    func writeCounters(_ record: TraceRecord.SampleCounters, to writer: inout TraceByteWriter) {
        writer.varint(record.stall)
        writer.varint(record.sample)
        writer.byte(record.delta == nil ? 0 : 1)
        for value in record.counters.values { writer.varint(value) }
        for value in record.delta?.values ?? [] { writer.varint(value) }
    }

    func writeWait(_ record: TraceRecord.SampleWait, to writer: inout TraceByteWriter) {
        writer.varint(record.stall)
        writer.varint(record.sample)
        writer.byte(record.kind.rawValue)
        var flags: UInt8 = 0
        if record.fd != nil { flags |= 1 }
        if record.address != nil { flags |= 2 }
        if record.ownerTID != nil { flags |= 4 }
        writer.byte(flags)
        if let fd = record.fd { writer.varint(zigzag(Int64(fd))) }
        if let address = record.address { writer.varint(address) }
        if let tid = record.ownerTID { writer.varint(zigzag(Int64(tid))) }
        writer.optionalString(record.operation)
        writer.optionalString(record.target)
        writer.optionalString(record.ownerName)
        writer.optionalString(record.statement)
        let frames = record.ownerFrames.prefix(TraceFormat.maxFrames)
        writer.varint(UInt64(frames.count))
        var previous: UInt64 = 0
        for (index, address) in frames.enumerated() {
            if index == 0 {
                writer.varint(address)
            } else {
                writer.signedVarint(Int64(bitPattern: address &- previous))
            }
            previous = address
        }
    }
}

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
        let kindCode = try reader.byte("kind")
        guard let kind = WaitFact.Kind(rawValue: kindCode) else { throw .outOfRange("kind", UInt64(kindCode)) }
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
        var previous: UInt64 = 0
        for index in 0..<Int(count) {
            let address =
                index == 0
                ? try reader.varint("frames")
                : previous &+ UInt64(bitPattern: try reader.signedVarint("frames"))
            frames.append(address)
            previous = address
        }
        return .init(
            stall: stall, sample: sample, kind: kind, operation: operation, fd: fd, target: target, address: address,
            ownerTID: owner, ownerName: ownerName, ownerFrames: frames, statement: statement)
    }
}
