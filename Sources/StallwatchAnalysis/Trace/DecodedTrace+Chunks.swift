// Decoding one large trace on several cores. Sync markers reset the only state the decoder
// carries from record to record (the callout base), so the records between two markers decode
// on their own: a chunk is the bytes from one marker to the next chosen one. Each chunk is
// decoded apart (callouts only counted, everything else kept as records); the records are then
// taken in, in file order, by the same `add` the serial path uses, so the result is the same
// trace. A chunk that meets any problem, or that does not end exactly at the next chunk's
// start (a sync pattern inside a payload), makes the caller fall back to the serial path:
// damaged traces are always read serially, with the serial path's messages, and so are version 1
// traces.

import StallwatchCore

/// The records of one chunk of a trace, decoded on their own.
///
/// A plain value; build it on any thread.
package struct TraceChunk: Sendable {
    /// Every record but callouts, in file order.
    var records: [TraceRecord] = []
    var calloutCount = 0
    var calloutNanos: UInt64 = 0
    var lastCalloutEnd: UInt64 = 0
    var recordCount = 0
    var unknownRecordCount = 0
    /// Where the chunk ends in the file.
    var end = 0
    /// The sequences of the chunk's first and last sync markers.
    var syncs: (first: UInt64, last: UInt64)?

    /// Decodes `bytes[start..<end]`, which must start with a record (a sync marker, or the
    /// first record after the preamble) and end with one. Nil when anything about the chunk
    /// is not clean: then decode the whole trace serially.
    package init?(decoding bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) {
        guard start >= TraceFormat.preambleSize, start <= end, end <= bytes.count else { return nil }
        // A version 1 trace's samples are placed by the ones before them (`Version1Samples`).
        guard UInt16(bytes[4]) | UInt16(bytes[5]) << 8 >= 2 else { return nil }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[..<end])
        var parser = TraceParser(fileName: nil, recordsFrom: start)
        while let record = parser.next(in: slice) {
            if case .callout(let callout) = record {
                calloutCount += 1
                calloutNanos &+= callout.duration
                lastCalloutEnd = max(lastCalloutEnd, callout.start &+ callout.duration)
            } else {
                records.append(record)
            }
        }
        guard parser.outcome.problems.isEmpty else { return nil }
        self.end = end
        recordCount = parser.outcome.recordCount
        unknownRecordCount = parser.outcome.unknownRecordCount
        if let first = parser.firstSync, let last = parser.lastSync { syncs = (first, last) }
    }

    /// Whether the sync markers of `chunks` (in file order) go up from one chunk to the next, as
    /// they do within each: a repeat across a boundary is the serial path's to report.
    package static func syncsAscend(_ chunks: [TraceChunk]) -> Bool {
        var last: UInt64?
        for chunk in chunks {
            guard let syncs = chunk.syncs else { continue }
            if let last, syncs.first <= last { return false }
            last = syncs.last
        }
        return true
    }

    /// Where to split `bytes` (a whole trace) into about `count` chunks: the offsets of sync
    /// markers near evenly spaced points, first the end of the preamble; strictly increasing.
    /// Fewer (down to one) when the trace is small or has few markers.
    package static func boundaries(of bytes: UnsafeRawBufferPointer, count: Int) -> [Int] {
        var result = [TraceFormat.preambleSize]
        guard count > 1, bytes.count > TraceFormat.preambleSize else { return result }
        let step = bytes.count / count
        for index in 1..<count {
            let target = max(index * step, result.last!)
            guard let sync = TraceParser.nextSync(after: target, in: bytes) else { break }
            if sync > result.last! { result.append(sync) }
        }
        return result
    }
}

extension DecodedTrace {
    /// The trace whose chunks (from `TraceChunk(decoding:from:to:)`, in file order, covering
    /// the whole file after the preamble) are `chunks`: the same value
    /// `DecodedTrace(decoding:fileName:)` gives for the same bytes (`fileName` names the file
    /// in its problems).
    package init(chunks: [TraceChunk], fileName: String? = nil) {
        var assembler = StallAssembler()
        for chunk in chunks {
            for record in chunk.records { add(record, to: &assembler) }
            calloutCount += chunk.calloutCount
            calloutNanos &+= chunk.calloutNanos
            lastCalloutEnd = max(lastCalloutEnd, chunk.lastCalloutEnd)
            outcome.recordCount += chunk.recordCount
            outcome.unknownRecordCount += chunk.unknownRecordCount
        }
        assemble(assembler, fileName: fileName, inputLength: chunks.last?.end ?? 0)
    }
}
