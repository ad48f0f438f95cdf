// Reading version 1 traces (docs/trace-format.md, "Version 1"): their samples carry no index,
// thread or look, and the records about a sample name it by its stall and time. The pool
// monitor of that version stamped one look's samples a nanosecond apart, so samples of a stall
// stamped less than `lookWidth` after the first of a look are that look. This is the only place
// that knows it: each version 1 record leaves the parser as version 2 would have written it.

import StallwatchCore

/// What a version 1 trace's samples so far say about the next ones: each stall's count of
/// samples, its current look and the index of each sample by time.
///
/// Part of one `TraceParser`; one thread at a time.
struct Version1Samples {
    /// Samples of one stall stamped closer than this to the first of a look are that look.
    static let lookWidth: UInt64 = 1_000

    private struct Stall {
        var count: UInt64 = 0
        var look: UInt32 = 0
        var lookStart: UInt64?
        var byTime: [UInt64: (index: UInt64, look: UInt32)] = [:]
    }

    private var stalls: [UInt64: Stall] = [:]

    /// `record` as version 2 has it: a sample with its index in its stall and its look (the
    /// thread stays unknown, 0); a record about a sample naming it by index instead of time
    /// (one whose sample was not read names none: `UInt64.max`).
    mutating func place(_ record: TraceRecord) -> TraceRecord {
        switch record {
        case .sample(var sample):
            (sample.index, sample.look) = place(stall: sample.stall, time: sample.time)
            return .sample(sample)
        case .sampleProvenance(let about): return .sampleProvenance(namingItsSample(about))
        case .sampleCounters(let about): return .sampleCounters(namingItsSample(about))
        case .sampleWait(let about): return .sampleWait(namingItsSample(about))
        case .sampleAsyncChain(let about): return .sampleAsyncChain(namingItsSample(about))
        default: return record
        }
    }

    /// `record`, which names its sample by time, naming it by index instead.
    private func namingItsSample<Record: AboutASample>(_ record: Record) -> Record {
        var named = record
        named.sample = index(stall: record.stall, time: record.sample)
        return named
    }

    /// The index and look of a sample of stall `id` at `time`, in file order (a trace writes a
    /// stall's samples in time order). A sample at a time seen before repeats that one's record.
    private mutating func place(stall id: UInt64, time: UInt64) -> (index: UInt64, look: UInt32) {
        var stall = stalls[id] ?? Stall()
        defer { stalls[id] = stall }
        if let known = stall.byTime[time] { return known }
        if let start = stall.lookStart, time >= start, time - start < Self.lookWidth {
            // One more thread of the current look.
        } else {
            if stall.lookStart != nil { stall.look += 1 }
            stall.lookStart = time
        }
        let placed = (index: stall.count, look: stall.look)
        stall.count += 1
        stall.byTime[time] = placed
        return placed
    }

    /// The index of the sample of stall `stall` at `time`, `UInt64.max` if none was read.
    private func index(stall: UInt64, time: UInt64) -> UInt64 {
        stalls[stall]?.byTime[time]?.index ?? .max
    }
}
