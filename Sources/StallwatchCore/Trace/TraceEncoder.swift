/// Encodes trace records into caller memory (`docs/trace-format.md`).
///
/// The encoder writes a sync record before its first record and then again once
/// `syncInterval` bytes have gone by, so its output can be appended to a file as it comes.
/// It keeps the state `callout` records are delta-encoded against, so all the records of one
/// encoder must reach the file in the order it wrote them, none missing: when the caller's
/// buffer is too small, an `encode` method writes nothing, returns 0 and leaves the encoder
/// unchanged (count the record as lost and write `lostRecords` later).
///
/// `encodeCallout` and `encodeSample` neither allocate nor lock, so a recorder can call them
/// on the main thread to write straight into its ring. An encoder is a value owned by one
/// thread at a time.
public struct TraceEncoder: Sendable {
    /// About how many bytes go between two sync records.
    public let syncInterval: Int
    /// The time the next callout's start is written as a delta from: the previous callout's
    /// end (start + duration).
    public private(set) var calloutBase: UInt64
    private var bytesSinceSync = 0
    private var syncSequence: UInt64 = 0
    private var syncDue = true

    /// Creates an encoder that writes a sync record about every `syncInterval` bytes (at
    /// least 64). A reader loses at most that much around a corrupt byte.
    public init(syncInterval: Int = 4_096, calloutBase: UInt64 = 0) {
        self.syncInterval = max(64, syncInterval)
        self.calloutBase = calloutBase
    }

    /// The preamble every trace file starts with: magic, version, two zero bytes.
    public static var preamble: [UInt8] {
        let magic = TraceFormat.magic
        let version = TraceFormat.version
        return [
            magic.0, magic.1, magic.2, magic.3, UInt8(truncatingIfNeeded: version),
            UInt8(truncatingIfNeeded: version >> 8), 0, 0,
        ]
    }

    /// Writes one callout record (preceded by a sync record when one is due) at the start of
    /// `buffer`. Returns the bytes written, or 0 if they did not fit (then nothing changed).
    ///
    /// No allocation; call it on the thread that owns the encoder (the main thread).
    public mutating func encodeCallout(
        site: UInt64, mode: UInt16, start: UInt64, duration: UInt64,
        into buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        let delta = Int64(bitPattern: start &- calloutBase)
        let written = writeRecord(.callout, into: buffer) { writer in
            writer.varint(site)
            writer.varint(UInt64(mode))
            writer.signedVarint(delta)
            writer.varint(duration)
        }
        if written > 0 { calloutBase = start &+ duration }
        return written
    }

    /// Writes one sample record (preceded by a sync record when one is due) at the start of
    /// `buffer`. `index` is its place among its stall's samples, `look` the look it shares with
    /// other samples (`nil`: its own); `wchan` is the wait channel's UTF-8 bytes (`nil` for
    /// none); `frames` are return addresses, innermost first (at most `TraceFormat.maxFrames`
    /// are kept). Returns the bytes written, or 0 if they did not fit (then nothing changed).
    ///
    /// No allocation; call it on the thread that owns the encoder.
    public mutating func encodeSample(
        stall: UInt64, index: UInt64, tid: Int32, look: UInt32?, time: UInt64, state: ThreadState, syscall: Int32?,
        wchan: UnsafeRawBufferPointer?, cpuTime: UInt64, annotation: UInt64,
        captureTimedOut: Bool, frames: UnsafeBufferPointer<UInt64>,
        into buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        writeRecord(.sample, into: buffer) { writer in
            writer.varint(stall)
            writer.varint(index)
            writer.varint(UInt64(UInt32(bitPattern: tid)))
            writer.varint(look.map { UInt64($0) + 1 } ?? 0)
            writer.varint(time)
            writer.byte(state.rawValue)
            writer.byte(captureTimedOut ? 1 : 0)
            writer.varint(syscall.map { zigzag(Int64($0)) + 1 } ?? 0)
            writer.varint(cpuTime)
            writer.varint(annotation)
            writer.optionalBytes(wchan)
            writer.addresses(frames.prefix(TraceFormat.maxFrames))
        }
    }

    /// Writes `record` (preceded by a sync record when one is due) at the start of `buffer`.
    /// Returns the bytes written, or 0 if they did not fit (then nothing changed). Encoding a
    /// `.sync` record makes its `calloutBase` the encoder's.
    ///
    /// May allocate (for strings that are not native); call it on the thread that owns the
    /// encoder.
    public mutating func encode(_ record: TraceRecord, into buffer: UnsafeMutableRawBufferPointer)
        -> Int
    {
        switch record {
        case .callout(let callout):
            return encodeCallout(
                site: callout.site, mode: callout.mode, start: callout.start,
                duration: callout.duration, into: buffer)
        case .sample(let sample):
            return sample.frames.withUnsafeBufferPointer { frames in
                func encode(_ wchan: UnsafeRawBufferPointer?) -> Int {
                    encodeSample(
                        stall: sample.stall, index: sample.index, tid: sample.tid, look: sample.look,
                        time: sample.time, state: sample.state,
                        syscall: sample.syscall, wchan: wchan, cpuTime: sample.cpuTime,
                        annotation: sample.annotation, captureTimedOut: sample.captureTimedOut,
                        frames: frames, into: buffer)
                }
                guard var wchan = sample.wchan else { return encode(nil) }
                return wchan.withUTF8 { encode(UnsafeRawBufferPointer($0)) }
            }
        case .sync(let sync):
            var writer = TraceByteWriter(buffer)
            writeSync(&writer, sequence: sync.sequence, calloutBase: sync.calloutBase)
            guard !writer.overflowed else { return 0 }
            calloutBase = sync.calloutBase
            syncSequence = sync.sequence &+ 1
            bytesSinceSync = 0
            syncDue = false
            return writer.position
        default:
            return writeRecord(record.kind, into: buffer) { Self.writePayload(of: record, to: &$0) }
        }
    }

    /// Appends `record` (preceded by a sync record when one is due) to `bytes`.
    ///
    /// Allocates; call it on the thread that owns the encoder.
    public mutating func append(_ record: TraceRecord, to bytes: inout [UInt8]) {
        let start = bytes.count
        var room = 256
        while true {
            bytes.append(contentsOf: repeatElement(0, count: room))
            let written = bytes.withUnsafeMutableBytes { buffer in
                encode(record, into: UnsafeMutableRawBufferPointer(rebasing: buffer[start...]))
            }
            bytes.removeLast(bytes.count - start - written)
            if written > 0 { return }
            room *= 4
        }
    }

    /// Writes one record of `kind`, preceded by a sync record when one is due, at the start of
    /// `buffer`: the framing every kind but `sync` shares, around the payload `writeFields`
    /// writes. Returns the bytes written, or 0 if they did not fit (then nothing changed).
    ///
    /// No allocation of its own (the closure does not escape); the thread that owns the encoder.
    @inline(__always)
    private mutating func writeRecord(
        _ kind: TraceRecordKind, into buffer: UnsafeMutableRawBufferPointer,
        _ writeFields: (inout TraceByteWriter) -> Void
    ) -> Int {
        var writer = TraceByteWriter(buffer)
        let sync = writeSyncIfDue(&writer)
        let payload = writer.beginRecord(kind)
        writeFields(&writer)
        writer.endRecord(payloadStart: payload)
        return commit(writer, sync: sync) ? writer.position : 0
    }

    /// Whether a sync record was written.
    @inline(__always)
    private mutating func writeSyncIfDue(_ writer: inout TraceByteWriter) -> Bool {
        guard syncDue || bytesSinceSync >= syncInterval else { return false }
        writeSync(&writer, sequence: syncSequence, calloutBase: calloutBase)
        return true
    }

    private func writeSync(_ writer: inout TraceByteWriter, sequence: UInt64, calloutBase: UInt64) {
        let payload = writer.beginRecord(.sync)
        withUnsafeBytes(of: TraceFormat.syncPatternWord.littleEndian) { writer.bytes($0) }
        writer.varint(sequence)
        writer.varint(calloutBase)
        writer.endRecord(payloadStart: payload)
    }

    @inline(__always)
    private mutating func commit(_ writer: TraceByteWriter, sync: Bool) -> Bool {
        guard !writer.overflowed else { return false }
        if sync {
            syncSequence &+= 1
            syncDue = false
            bytesSinceSync = 0
        }
        bytesSinceSync += writer.position
        return true
    }
}
