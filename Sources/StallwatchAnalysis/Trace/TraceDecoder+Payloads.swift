// Parses the payloads of every kind but `callout` and `sync` (which carry the decoder's
// delta state). Field order is the one `docs/trace-format.md` lists; any value the encoder
// cannot write (an unknown enum byte, a reserved flag bit) is an error, because without
// checksums strictness is what catches damage.

import StallwatchCore

extension TraceParser {
    static func parseColdPayload(_ kind: TraceRecordKind, _ reader: inout TraceByteReader, version: UInt16)
        throws(TraceFieldError) -> TraceRecord
    {
        switch kind {
        case .header:
            let name = try reader.string("processName")
            let pid = try reader.varint32("pid")
            let wall = try reader.varint("wallClockStart")
            let clockBase = try reader.varint("clockBase")
            let mode = try reader.code(TraceMode.self, "mode")
            let thresholds = TierThresholds(
                budget: try duration(&reader, "budget"), microHang: try duration(&reader, "microHang"),
                hang: try duration(&reader, "hang"), severe: try duration(&reader, "severe"))
            let interval = try duration(&reader, "sampleInterval")
            return .header(
                .init(
                    processName: name, pid: pid, wallClockStart: wall, clockBase: clockBase, mode: mode,
                    thresholds: thresholds, sampleInterval: interval))
        case .module:
            let index = try reader.varint32("index")
            if index == 0 { throw .outOfRange("index", 0) }
            let load = try reader.varint("loadAddress")
            let path = try reader.string("path")
            let buildID = Array(try reader.bytes("buildID", count: try reader.varint("buildID")))
            return .module(.init(index: index, loadAddress: load, path: path, buildID: buildID))
        case .callSite:
            return .callSite(try parseCallSite(&reader))
        case .modeName:
            let id = try reader.varint16("id")
            return .modeName(.init(id: id, name: try reader.string("name")))
        case .annotation:
            let id = try reader.varint("id")
            if id == 0 { throw .outOfRange("id", 0) }
            let code = try reader.byte("category")
            let category = TraceCodes.category(code)
            if code != 0 && category == nil { throw .outOfRange("category", UInt64(code)) }
            let label = try reader.string("label")
            return .annotation(.init(id: id, annotation: Annotation(label: label, category: category)))
        case .symbol:
            return .symbol(try parseSymbol(&reader))
        case .stallBegan:
            return .stallBegan(try parseStallBegan(&reader))
        case .sample:
            return .sample(try parseSample(&reader, version: version))
        case .stallEnded:
            return .stallEnded(try parseStallEnded(&reader))
        case .stallRetimed:
            let id = try reader.varint("id")
            let start = try reader.varint("start")
            let end = try reader.varint("end")
            if end < start { throw .outOfRange("end", end) }
            return .stallRetimed(.init(id: id, start: start, end: end))
        case .stallContext:
            let id = try reader.varint("id")
            let expected = try reader.optionalString("expected")
            let count = try reader.varint("count")
            // Each pair takes two bytes at least: a count past that is corruption, not a size.
            if count > UInt64(reader.end - reader.position) / 2 { throw .outOfRange("count", count) }
            var state: [TraceRecord.StallContext.KeyValue] = []
            for _ in 0..<count {
                let key = try reader.string("key")
                state.append(.init(key: key, value: try reader.string("value")))
            }
            return .stallContext(.init(id: id, expected: expected, state: state))
        case .congestion:
            return .congestion(
                .init(
                    intervalStart: try reader.varint("intervalStart"),
                    intervalLength: try reader.varint("intervalLength"), count: try reader.varint("count")
                ))
        case .frameClock:
            return .frameClock(
                .init(
                    intervalStart: try reader.varint("intervalStart"),
                    intervalLength: try reader.varint("intervalLength"),
                    expected: try reader.varint("expected"), delivered: try reader.varint("delivered"),
                    dropped: try reader.varint("dropped")))
        case .latencyHistogram:
            let start = try reader.varint("intervalStart")
            let length = try reader.varint("intervalLength")
            let count = try reader.varint("bucketCount")
            // Each bucket takes at least two bytes: refuse a count the payload cannot hold before
            // reserving room for it.
            guard count <= UInt64(reader.end - reader.position) / 2 else {
                throw .outOfRange("bucketCount", count)
            }
            var buckets: [LatencyBuckets.Bucket] = []
            buckets.reserveCapacity(Int(count))
            var next: UInt64 = 0
            for _ in 0..<count {
                let gap = try reader.varint("bucketIndex")
                let (index, overflow) = next.addingReportingOverflow(gap)
                guard !overflow, index < UInt64(LatencyBuckets.count) else {
                    throw .outOfRange("bucketIndex", gap)
                }
                let value = try reader.varint("bucketCount")
                if value == 0 { throw .outOfRange("bucketCount", 0) }
                buckets.append(.init(index: UInt16(index), count: value))
                next = index + 1
            }
            return .latencyHistogram(
                .init(intervalStart: start, intervalLength: length, buckets: buckets))
        case .lostRecords:
            return .lostRecords(.init(time: try reader.varint("time"), count: try reader.varint("count")))
        case .recordedUntil:
            return .recordedUntil(time: try reader.varint("time"))
        case .stopped:
            return .stopped(from: try reader.varint("from"), length: try reader.varint("length"))
        case .watched:
            let since = try reader.varint("since")
            let tid = UInt32(truncatingIfNeeded: try reader.varint("tid"))
            let how = try reader.string("how")
            return .watched(WatchedExecutor(label: try reader.string("label"), how: how, tid: tid, since: since))
        case .platform:
            return .platform(.init(architecture: try reader.string("architecture")))
        case .origin:
            let traceID = Array(try reader.bytes("traceID", count: try reader.varint("traceID")))
            let host = try reader.string("host")
            let executable = try reader.string("executable")
            let buildID = Array(try reader.bytes("buildID", count: try reader.varint("buildID")))
            let appVersion = try reader.optionalString("appVersion")
            return .origin(
                .init(traceID: traceID, host: host, executable: executable, buildID: buildID, appVersion: appVersion))
        case .sampleAsyncChain:
            let stall = try reader.varint("stall")
            let sample = try reader.varint("sample")
            let firstAsync = try reader.varint("firstAsync")
            let end = try reader.code(AsyncChainEnd.self, "end")
            return .sampleAsyncChain(.init(stall: stall, sample: sample, firstAsync: firstAsync, end: end))
        case .sampleProvenance:
            let stall = try reader.varint("stall")
            let sample = try reader.varint("sample")
            let source = try reader.code(SampleSource.self, "source")
            return .sampleProvenance(.init(stall: stall, sample: sample, source: source))
        case .congestedIteration:
            let start = try reader.varint("start")
            let duration = try reader.varint("duration")
            let callouts = try reader.varint("callouts")
            let sites = try parseTriples(&reader, count: "siteCount", ("site", "count", "nanos")).map {
                TraceRecord.CongestedIteration.SiteTime(site: $0.0, count: $0.1, nanos: $0.2)
            }
            return .congestedIteration(.init(start: start, duration: duration, callouts: callouts, sites: sites))
        case .stallLeadUp:
            let id = try reader.varint("id")
            let window = try reader.varint("window")
            let callouts = try reader.varint("callouts")
            let busy = try reader.varint("busy")
            let lost = try reader.varint("lost")
            let sites = try parseTriples(&reader, count: "siteCount", ("site", "count", "nanos")).map {
                TraceRecord.CongestedIteration.SiteTime(site: $0.0, count: $0.1, nanos: $0.2)
            }
            let recent = try parseTriples(&reader, count: "recentCount", ("site", "before", "duration")).map {
                TraceRecord.StallLeadUp.Recent(site: $0.0, before: $0.1, duration: $0.2)
            }
            return .stallLeadUp(
                .init(
                    id: id, window: window, callouts: callouts, busy: busy, lost: lost, sites: sites, recent: recent))
        case .sampleCounters:
            return .sampleCounters(try parseCounters(&reader))
        case .sampleWait:
            return .sampleWait(try parseWait(&reader))
        case .callout, .sync:
            preconditionFailure("parsed by TraceParser.parsePayload")
        }
    }

    /// A count (named `count` in errors), then three varints per item (named `names`). Each
    /// item takes at least three bytes: a count past that is corruption, not a size.
    private static func parseTriples(
        _ reader: inout TraceByteReader, count name: StaticString, _ names: (StaticString, StaticString, StaticString)
    ) throws(TraceFieldError) -> [(UInt64, UInt64, UInt64)] {
        let count = try reader.varint(name)
        guard count <= UInt64(reader.end - reader.position) / 3 else { throw .outOfRange(name, count) }
        var triples: [(UInt64, UInt64, UInt64)] = []
        triples.reserveCapacity(Int(count))
        for _ in 0..<count {
            triples.append((try reader.varint(names.0), try reader.varint(names.1), try reader.varint(names.2)))
        }
        return triples
    }

    private static func parseSample(_ reader: inout TraceByteReader, version: UInt16) throws(TraceFieldError)
        -> TraceRecord.Sample
    {
        let (fields, wchan) = try parseSampleFields(&reader, version: version)
        let count = try frameCount(&reader)
        var frames: [UInt64] = []
        frames.reserveCapacity(count)
        try readFrames(&reader, count: count, into: &frames)
        return .init(
            stall: fields.stall, index: UInt64(fields.index), tid: fields.tid, look: fields.look, time: fields.time,
            state: fields.state, syscall: fields.syscall,
            wchan: wchan.map { String(decoding: $0, as: UTF8.self) }, cpuTime: fields.cpuTime,
            annotation: fields.annotation, captureTimedOut: fields.captureTimedOut, frames: frames)
    }

    /// A `callSite` payload.
    @inline(__always)
    static func parseCallSite(_ reader: inout TraceByteReader) throws(TraceFieldError) -> TraceRecord.CallSite {
        let id = try reader.varint("id")
        let calloutKind = try reader.code(CalloutKind.self, "kind")
        let line = try reader.varint32("line")
        let label = try reader.optionalString("label")
        let file = try reader.string("file")
        return .init(id: id, kind: calloutKind, label: label, file: file, line: line)
    }

    /// A `symbol` payload.
    @inline(__always)
    static func parseSymbol(_ reader: inout TraceByteReader) throws(TraceFieldError) -> TraceRecord.Symbol {
        let address = try reader.varint("address")
        let module = try reader.varint32("module")
        let line = try reader.varint32("line")
        let name = try reader.optionalString("name")
        let file = try reader.optionalString("file")
        return .init(address: address, module: module, name: name, file: file, line: line == 0 ? nil : line)
    }

    /// A `stallBegan` payload.
    @inline(__always)
    static func parseStallBegan(_ reader: inout TraceByteReader) throws(TraceFieldError) -> TraceRecord.StallBegan {
        let id = try reader.varint("id")
        let start = try reader.varint("start")
        let site = try reader.varint("site")
        let mode = try reader.varint16("mode")
        let phase = try reader.code(LoopActivity.self, "phase")
        let tier = try reader.decoded("tier", TraceCodes.tier)
        return .init(id: id, start: start, site: site, mode: mode, phase: phase, tier: tier)
    }

    /// A `stallEnded` payload.
    @inline(__always)
    static func parseStallEnded(_ reader: inout TraceByteReader) throws(TraceFieldError) -> TraceRecord.StallEnded {
        let id = try reader.varint("id")
        let end = try reader.varint("end")
        let flags = StallFlags(rawValue: try reader.byte("flags"))
        if flags.rawValue & ~0b111 != 0 { throw .outOfRange("flags", UInt64(flags.rawValue)) }
        return .init(id: id, end: end, flags: flags)
    }

    /// A sample record's fields before its frames (its stack and wait channel not yet
    /// numbered: 0 and -1), and the wait channel's bytes (in the buffer being decoded). A
    /// version 1 record has no index, thread or look: 0, 0 and none (`Version1Samples` places it).
    @inline(__always)
    static func parseSampleFields(_ reader: inout TraceByteReader, version: UInt16) throws(TraceFieldError)
        -> (fields: PendingSample, wchan: UnsafeRawBufferPointer?)
    {
        let stall = try reader.varint("stall")
        var index: UInt32 = 0
        var tid: Int32 = 0
        var look: UInt32 = 0
        if version >= 2 {
            let rawIndex = try reader.varint("index")
            guard let value = UInt32(exactly: rawIndex) else { throw .outOfRange("index", rawIndex) }
            index = value
            let rawTID = try reader.varint("tid")
            guard let thread = Int32(exactly: rawTID) else { throw .outOfRange("tid", rawTID) }
            tid = thread
            let rawLook = try reader.varint("look")
            guard let code = UInt32(exactly: rawLook) else { throw .outOfRange("look", rawLook) }
            look = code
        }
        let time = try reader.varint("time")
        let state = try reader.code(ThreadState.self, "state")
        let flags = try reader.byte("flags")
        if flags > 1 { throw .outOfRange("flags", UInt64(flags)) }
        let syscallCode = try reader.varint("syscall")
        var syscall: Int32?
        if syscallCode != 0 {
            guard let number = Int32(exactly: unzigzag(syscallCode - 1)) else {
                throw .outOfRange("syscall", syscallCode)
            }
            syscall = number
        }
        let cpuTime = try reader.varint("cpuTime")
        let annotation = try reader.varint("annotation")
        let wchanCount = try reader.varint("wchan")
        let wchan = wchanCount == 0 ? nil : try reader.bytes("wchan", count: wchanCount - 1)
        let fields = PendingSample(
            stall: stall, index: index, tid: tid, lookCode: look, time: time, cpuTime: cpuTime, annotation: annotation,
            syscall: syscall, stack: 0, wchan: -1, state: state, captureTimedOut: flags == 1)
        return (fields, wchan)
    }

    /// A sample's frame count, checked against the limit and the bytes left.
    @inline(__always)
    static func frameCount(_ reader: inout TraceByteReader) throws(TraceFieldError) -> Int {
        let count = try reader.varint("frameCount")
        guard count <= UInt64(min(TraceFormat.maxFrames, reader.end - reader.position)) else {
            throw .outOfRange("frameCount", count)
        }
        return Int(count)
    }

    /// Appends `count` frame addresses (the first whole, the rest as deltas) to `frames`.
    static func readFrames(_ reader: inout TraceByteReader, count: Int, into frames: inout [UInt64])
        throws(TraceFieldError)
    {
        var previous: UInt64 = 0
        for index in 0..<count {
            let address =
                index == 0
                ? try reader.varint("frames")
                : previous &+ UInt64(bitPattern: try reader.signedVarint("frames"))
            frames.append(address)
            previous = address
        }
    }

    private static func duration(_ reader: inout TraceByteReader, _ field: StaticString)
        throws(TraceFieldError) -> Duration
    {
        let nanoseconds = try reader.varint(field)
        guard let value = Int64(exactly: nanoseconds) else { throw .outOfRange(field, nanoseconds) }
        return .nanoseconds(value)
    }
}
