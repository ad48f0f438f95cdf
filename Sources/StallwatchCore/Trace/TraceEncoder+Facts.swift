// The payloads of kinds 18 (sampleCounters) and 19 (sampleWait); field order is the one
// docs/trace-format.md lists (TraceDecoder+Facts.swift reads them back).

extension TraceEncoder {
    static func writeCounters(_ record: TraceRecord.SampleCounters, to writer: inout TraceByteWriter) {
        writer.varint(record.stall)
        writer.varint(record.sample)
        writer.byte(record.delta == nil ? 0 : 1)
        for value in record.counters.values { writer.varint(value) }
        for value in record.delta?.values ?? [] { writer.varint(value) }
    }

    static func writeWait(_ record: TraceRecord.SampleWait, to writer: inout TraceByteWriter) {
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
        writer.addresses(record.ownerFrames.prefix(TraceFormat.maxFrames))
    }
}
