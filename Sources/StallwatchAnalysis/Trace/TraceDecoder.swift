import StallwatchCore

/// Decodes a trace (`docs/trace-format.md`) record by record.
///
/// Never traps on bad input. Records of unknown kinds are skipped. A truncated trace yields
/// every record before the incomplete one, and so does a trace that ends in junk (zero-filled
/// or garbage bytes with no sync marker and no whole record after them, as a crash or power
/// loss leaves); after a corrupt region the decoder scans for the next sync marker and goes
/// on from there. Once `next()` returns `nil`, `outcome` says how the input ended and lists
/// every problem (`TraceError`, with file name and byte offset).
///
/// A value owned by one thread at a time; decode different traces on different threads.
public struct TraceDecoder: Sequence, IteratorProtocol {
    private let bytes: [UInt8]
    private var parser: TraceParser

    /// Decodes `bytes`; `fileName` is only used in error messages.
    public init(_ bytes: [UInt8], fileName: String? = nil) {
        self.bytes = bytes
        self.parser = TraceParser(fileName: fileName)
    }

    /// The next record, or `nil` at the end of the input.
    public mutating func next() -> TraceRecord? {
        bytes.withUnsafeBytes { parser.next(in: $0) }
    }

    /// How decoding went so far; complete once `next()` has returned `nil`.
    public var outcome: TraceOutcome { parser.outcome }

    /// The byte offset of the record `next()` returned last.
    public var recordOffset: Int { parser.recordOffset }

    /// Decodes all of `bytes`, calling `body` with each record and its byte offset, and
    /// returns how it went. The fastest way through a large trace.
    public static func decode(
        _ bytes: UnsafeRawBufferPointer, fileName: String? = nil,
        _ body: (TraceRecord, Int) throws -> Void
    ) rethrows -> TraceOutcome {
        var parser = TraceParser(fileName: fileName)
        while let record = parser.next(in: bytes) {
            try body(record, parser.recordOffset)
        }
        return parser.outcome
    }
}

extension TraceDecoder {
    /// Decodes all of `bytes` as `decode(_:fileName:_:)` does, handing each callout to
    /// `callout` on the short path the assembler takes them (no `TraceRecord` to switch over:
    /// a full-mode trace is tens of millions of them) and every other record to `other`.
    package static func decode(
        _ bytes: UnsafeRawBufferPointer, callout: (TraceRecord.Callout) -> Void, other: (TraceRecord) -> Void
    ) -> TraceOutcome {
        var parser = TraceParser(fileName: nil)
        while let record = parser.next(in: bytes) {
            if case .callout(let one) = record { callout(one) } else { other(record) }
        }
        return parser.outcome
    }

    /// The callouts of `bytes[start..<end]`, a chunk that starts at a sync marker
    /// (`TraceChunk.boundaries`), handed to `callout`; false if the chunk is not clean (then
    /// the caller reads the trace serially).
    package static func callouts(
        in bytes: UnsafeRawBufferPointer, from start: Int, to end: Int, _ callout: (TraceRecord.Callout) -> Void
    ) -> Bool {
        guard start >= TraceFormat.preambleSize, start <= end, end <= bytes.count else { return false }
        var parser = TraceParser(fileName: nil, recordsFrom: start)
        let slice = UnsafeRawBufferPointer(rebasing: bytes[..<end])
        while let record = parser.next(in: slice) {
            if case .callout(let one) = record { callout(one) }
        }
        return parser.outcome.problems.isEmpty
    }
}

/// The decoder's state, kept apart from the bytes so both entry points share it.
struct TraceParser {
    private enum Phase {
        case preamble, records, done
    }

    let fileName: String?
    private var phase = Phase.preamble
    private var offset = 0
    private(set) var recordOffset = 0
    private var calloutBase: UInt64 = 0
    private(set) var outcome = TraceOutcome()
    /// The sequence of the last sync marker read: each must be above the one before.
    private(set) var lastSync: UInt64?
    /// The sequence of the first sync marker read.
    private(set) var firstSync: UInt64?
    /// Where in `outcome.problems` the first out-of-order sync marker is.
    private var repeatedSyncProblem: Int?
    /// The header read: a trace has one.
    private var header: TraceRecord.Header?
    /// Whether the trace's header lies before where this parser started (a chunk past the
    /// first): then any header it reads is another.
    private var headerBehind = false
    /// The version the preamble gave.
    private(set) var version = TraceFormat.version
    /// A version 1 trace's samples so far, to place each sample and the records about it.
    private var version1 = Version1Samples()

    init(fileName: String?) {
        self.fileName = fileName
    }

    /// A parser that starts at `offset`, a record boundary past the preamble (the sync marker
    /// that opens one chunk of a file decoded in parallel) of a trace of version 2 or later
    /// (a version 1 trace's samples are placed by those before them: it is read serially).
    init(fileName: String?, recordsFrom offset: Int) {
        self.fileName = fileName
        phase = .records
        self.offset = offset
        // The first chunk holds the trace's header: one in a later chunk is another.
        headerBehind = offset > TraceFormat.preambleSize
    }

    /// The next record. Callouts, the bulk of a `full` trace, take a short path; anything
    /// unusual about one (or any other kind) goes the general way, which also reports errors.
    @inline(__always)
    mutating func next(in buffer: UnsafeRawBufferPointer) -> TraceRecord? {
        if phase == .records, let base = buffer.baseAddress, buffer.count - offset >= 2 {
            let start = offset
            let kind = base.load(fromByteOffset: start, as: UInt8.self)
            let length = Int(base.load(fromByteOffset: start + 1, as: UInt8.self))
            if kind == TraceRecordKind.callout.rawValue, length < 0x80,
                length <= buffer.count - start - 2
            {
                var reader = TraceByteReader(base: base, position: start + 2, end: start + 2 + length)
                if let callout = try? parseCallout(&reader), reader.position == reader.end {
                    calloutBase = callout.start &+ callout.duration
                    offset = reader.end
                    recordOffset = start
                    outcome.recordCount += 1
                    return .callout(callout)
                }
            }
        }
        return nextRecord(in: buffer)
    }

    /// Takes the next record straight into `assembler` when it is a well-formed sample,
    /// `stallBegan`, `stallEnded`, `callSite` or `symbol` (nearly every record of a fleet's
    /// traces) without making a `TraceRecord` of it; false, with nothing consumed, for anything
    /// else (which `next(in:)` then reads, and reports if it is bad).
    @inline(__always)
    mutating func takeStallRecord(in buffer: UnsafeRawBufferPointer, into assembler: inout StallAssembler) -> Bool {
        guard phase == .records, let base = buffer.baseAddress, buffer.count - offset >= 2 else { return false }
        let kind = base.load(fromByteOffset: offset, as: UInt8.self)
        guard
            (kind == TraceRecordKind.sample.rawValue && version >= 2) || kind == TraceRecordKind.stallBegan.rawValue
                || kind == TraceRecordKind.stallEnded.rawValue || kind == TraceRecordKind.callSite.rawValue
                || kind == TraceRecordKind.symbol.rawValue
        else { return false }
        let start = offset
        var header = TraceByteReader(base: base, position: start + 1, end: buffer.count)
        guard let length = try? header.varint("length"), length <= UInt64(TraceFormat.maxPayloadLength),
            Int(length) <= buffer.count - header.position
        else { return false }
        var reader = TraceByteReader(base: base, position: header.position, end: header.position + Int(length))
        do throws(TraceFieldError) {
            if kind == TraceRecordKind.sample.rawValue {
                try assembler.takeSample(&reader)
            } else if kind == TraceRecordKind.stallBegan.rawValue {
                let record = try TraceParser.parseStallBegan(&reader)
                try reader.finish()
                assembler.began.append(record)
            } else if kind == TraceRecordKind.stallEnded.rawValue {
                let record = try TraceParser.parseStallEnded(&reader)
                try reader.finish()
                assembler.ended.append(record)
            } else if kind == TraceRecordKind.callSite.rawValue {
                let site = try TraceParser.parseCallSite(&reader)
                try reader.finish()
                assembler.sites[site.id] = site
            } else {
                let symbol = try TraceParser.parseSymbol(&reader)
                try reader.finish()
                assembler.symbols[symbol.address] = symbol
            }
        } catch {
            return false
        }
        offset = reader.end
        recordOffset = start
        outcome.recordCount += 1
        return true
    }

    @inline(__always)
    private func parseCallout(_ reader: inout TraceByteReader) throws(TraceFieldError)
        -> TraceRecord.Callout
    {
        let site = try reader.varint("site")
        let mode = try reader.varint16("mode")
        let delta = try reader.signedVarint("start")
        let duration = try reader.varint("duration")
        return .init(
            site: site, mode: mode, start: calloutBase &+ UInt64(bitPattern: delta), duration: duration)
    }

    private mutating func nextRecord(in buffer: UnsafeRawBufferPointer) -> TraceRecord? {
        guard let base = buffer.baseAddress else {
            if phase == .preamble { fail(at: 0, .truncated(kind: nil), buffer) }
            phase = .done
            return nil
        }
        let count = buffer.count
        while true {
            switch phase {
            case .done:
                return nil
            case .preamble:
                readPreamble(buffer)
                continue
            case .records:
                break
            }
            let start = offset
            if start >= count {
                phase = .done
                return nil
            }
            let kind = base.load(fromByteOffset: start, as: UInt8.self)
            if kind == 0 {
                fail(at: start, .reservedKind(0), buffer)
                continue
            }
            if kind == TraceFormat.magicBytes[0], count - start >= TraceFormat.preambleSize,
                (0..<TraceFormat.magicBytes.count).allSatisfy({ buffer[start + $0] == TraceFormat.magicBytes[$0] })
            {
                // Another trace's preamble: two files joined end to end. Its records follow.
                outcome.problems.append(
                    TraceError(
                        fileName: fileName, offset: start, problem: .secondPreamble,
                        skippedBytes: TraceFormat.preambleSize, resumed: true))
                offset = start + TraceFormat.preambleSize
                calloutBase = 0
                lastSync = nil
                continue
            }
            var header = TraceByteReader(base: base, position: start + 1, end: count)
            let length: UInt64
            do {
                length = try header.varint("length")
            } catch {
                if case .pastEnd = error {
                    endOrResync(at: start, kind: kind, buffer)
                } else {
                    fail(at: start, .badLength(kind: kind, reason: "not a valid varint"), buffer)
                }
                continue
            }
            if length > UInt64(TraceFormat.maxPayloadLength) {
                let reason = "\(length) bytes is over the \(TraceFormat.maxPayloadLength)-byte limit"
                fail(at: start, .badLength(kind: kind, reason: reason), buffer)
                continue
            }
            let payloadStart = header.position
            guard Int(length) <= count - payloadStart else {
                endOrResync(at: start, kind: kind, buffer)
                continue
            }
            let end = payloadStart + Int(length)
            guard let known = TraceRecordKind(rawValue: kind) else {
                outcome.unknownRecordCount += 1
                offset = end
                continue
            }
            var reader = TraceByteReader(base: base, position: payloadStart, end: end)
            do {
                let record = try parsePayload(known, &reader)
                try reader.finish()
                offset = end
                recordOffset = start
                outcome.recordCount += 1
                checkSequence(record, at: start)
                return version == 1 ? version1.place(record) : record
            } catch {
                fail(at: start, .malformedRecord(kind: kind, reason: error.reason), buffer)
            }
        }
    }

    @inline(__always)
    private mutating func parsePayload(_ kind: TraceRecordKind, _ reader: inout TraceByteReader)
        throws(TraceFieldError) -> TraceRecord
    {
        switch kind {
        case .callout:
            let callout = try parseCallout(&reader)
            try reader.finish()
            calloutBase = callout.start &+ callout.duration
            return .callout(callout)
        case .sync:
            let pattern = try reader.bytes("pattern", count: 8)
            guard pattern.loadUnaligned(as: UInt64.self) == TraceFormat.syncPatternWord.littleEndian
            else { throw .outOfRange("pattern", pattern.loadUnaligned(as: UInt64.self)) }
            let sync = TraceRecord.Sync(
                sequence: try reader.varint("sequence"), calloutBase: try reader.varint("calloutBase"))
            calloutBase = sync.calloutBase
            return .sync(sync)
        default:
            return try TraceParser.parseColdPayload(kind, &reader, version: version)
        }
    }

    /// Notes a sync marker that does not follow the one before and a header after the first:
    /// records repeated, or traces joined. Both are read on (nothing is skipped), but the trace
    /// is damaged: what follows may count records twice.
    private mutating func checkSequence(_ record: TraceRecord, at start: Int) {
        switch record {
        case .sync(let sync):
            if let lastSync, sync.sequence <= lastSync {
                // The first is reported; later ones are counted in it (a copy that repeats
                // records repeats them throughout).
                if let first = repeatedSyncProblem,
                    case .repeatedSync(let sequence, let previous, let later) = outcome.problems[first].problem
                {
                    outcome.problems[first].problem = .repeatedSync(
                        sequence: sequence, previous: previous, later: later + 1)
                } else {
                    repeatedSyncProblem = outcome.problems.count
                    outcome.problems.append(
                        TraceError(
                            fileName: fileName, offset: start,
                            problem: .repeatedSync(sequence: sync.sequence, previous: lastSync, later: 0),
                            resumed: true))
                }
            }
            if firstSync == nil { firstSync = sync.sequence }
            lastSync = sync.sequence
        case .header(let header):
            guard self.header != nil || headerBehind else {
                self.header = header
                return
            }
            let again = self.header == header
            outcome.problems.append(
                TraceError(
                    fileName: fileName, offset: start,
                    problem: .secondHeader(process: again ? nil : header.processName, pid: header.pid), resumed: true))
        default: break
        }
    }

    private mutating func readPreamble(_ buffer: UnsafeRawBufferPointer) {
        let expected = TraceEncoder.preamble
        let available = min(buffer.count, TraceFormat.preambleSize)
        // Magic first: a wrong magic means "not a trace", whatever the version says.
        for index in 0..<min(available, 4) where buffer[index] != expected[index] {
            return fail(at: 0, .badPreamble, buffer)
        }
        if available < TraceFormat.preambleSize {
            outcome.problems.append(
                TraceError(
                    fileName: fileName, offset: 0, problem: .truncated(kind: nil),
                    skippedBytes: buffer.count))
            phase = .done
            return
        }
        let version = UInt16(buffer[4]) | UInt16(buffer[5]) << 8
        if version < TraceFormat.oldestReadVersion || version > TraceFormat.version {
            outcome.problems.append(
                TraceError(
                    fileName: fileName, offset: 4, problem: .unsupportedVersion(version),
                    skippedBytes: buffer.count - 4))
            phase = .done
            return
        }
        if buffer[6] != 0 || buffer[7] != 0 { return fail(at: 0, .badPreamble, buffer) }
        self.version = version
        phase = .records
        offset = TraceFormat.preambleSize
    }

    /// The input ends inside the record at `start`: a truncation, unless a sync marker follows
    /// (then the record's length was damaged).
    private mutating func endOrResync(
        at start: Int, kind: UInt8, _ buffer: UnsafeRawBufferPointer
    ) {
        if TraceParser.nextSync(after: start, in: buffer) != nil {
            fail(at: start, .badLength(kind: kind, reason: "runs past the end of the input"), buffer)
        } else {
            outcome.problems.append(
                TraceError(
                    fileName: fileName, offset: start, problem: .truncated(kind: kind),
                    skippedBytes: buffer.count - start))
            phase = .done
        }
    }

    /// Records a corrupt region starting at `start` and moves to the next sync marker, or to
    /// the end when there is none. Bad bytes after the preamble that neither a sync marker nor
    /// a whole record follows are the trace's junk tail: a truncation, not corruption.
    private mutating func fail(
        at start: Int, _ problem: TraceError.Problem, _ buffer: UnsafeRawBufferPointer
    ) {
        var error = TraceError(fileName: fileName, offset: start, problem: problem)
        if let sync = TraceParser.nextSync(after: start, in: buffer) {
            error.skippedBytes = sync - start
            error.resumed = true
            offset = sync
            phase = .records
        } else if phase == .records && !recordsFollow(start, in: buffer) {
            let zeroFilled = (start..<buffer.count).allSatisfy { buffer[$0] == 0 }
            error.problem = .junkTail(zeroFilled: zeroFilled)
            error.skippedBytes = buffer.count - start
            phase = .done
        } else {
            error.skippedBytes = buffer.count - start
            phase = .done
        }
        outcome.problems.append(error)
    }

    /// Whether records of known kinds, back to back, run from somewhere after `start` exactly
    /// to the end of the input: then the damage at `start` lies between records. Only known
    /// kinds count, since random bytes often frame as an unknown kind and a length.
    ///
    /// Every position is tried, but a chain is walked at most once: positions that began a
    /// whole record whose chain fell short are remembered, so the cost stays linear.
    private func recordsFollow(_ start: Int, in buffer: UnsafeRawBufferPointer) -> Bool {
        guard start + 1 < buffer.count else { return false }
        var probe = self  // parsing payloads moves the callout base; leave ours alone
        var fallsShort = Set<Int>()
        var chain: [Int] = []
        for first in (start + 1)..<buffer.count {
            var position = first
            chain.removeAll(keepingCapacity: true)
            while position < buffer.count, !fallsShort.contains(position),
                let end = probe.wholeKnownRecord(at: position, in: buffer)
            {
                chain.append(position)
                position = end
            }
            if position == buffer.count && !chain.isEmpty { return true }
            fallsShort.formUnion(chain)
        }
        return false
    }

    /// The end of the whole, well-formed record of a known kind at `start`, if there is one.
    private mutating func wholeKnownRecord(at start: Int, in buffer: UnsafeRawBufferPointer) -> Int? {
        guard let base = buffer.baseAddress, let kind = TraceRecordKind(rawValue: buffer[start]) else {
            return nil
        }
        var header = TraceByteReader(base: base, position: start + 1, end: buffer.count)
        guard let length = try? header.varint("length"), length <= UInt64(TraceFormat.maxPayloadLength),
            Int(length) <= buffer.count - header.position
        else { return nil }
        let end = header.position + Int(length)
        var reader = TraceByteReader(base: base, position: header.position, end: end)
        guard (try? parsePayload(kind, &reader)) != nil, (try? reader.finish()) != nil else { return nil }
        return end
    }

    /// The offset of the first sync record that starts after `start`: a sync kind byte, one
    /// length byte, then the pattern.
    static func nextSync(after start: Int, in buffer: UnsafeRawBufferPointer) -> Int? {
        let patternSize = 8
        let last = buffer.count - 2 - patternSize
        guard start + 1 <= last else { return nil }
        let kind = TraceRecordKind.sync.rawValue
        let pattern = TraceFormat.syncPatternWord.littleEndian
        for candidate in (start + 1)...last
        where buffer[candidate] == kind
            && buffer.loadUnaligned(fromByteOffset: candidate + 2, as: UInt64.self) == pattern
        {
            return candidate
        }
        return nil
    }
}
