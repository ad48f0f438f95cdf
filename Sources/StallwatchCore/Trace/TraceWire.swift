// The byte-level encoding shared by the encoder and the decoder: LEB128 varints, zigzag,
// length-prefixed strings. Both sides work on raw pointers so the hot paths stay free of
// allocation, reference counting and array bounds checks; every access is checked against
// the end by hand instead.

/// Writes into caller memory, never past its end. Once something does not fit, `overflowed`
/// is set and later writes are ignored: the caller checks once and discards the record.
struct TraceByteWriter {
    let base: UnsafeMutableRawPointer?
    let capacity: Int
    var position: Int
    var overflowed = false

    init(_ buffer: UnsafeMutableRawBufferPointer, at position: Int = 0) {
        self.base = buffer.baseAddress
        self.capacity = buffer.count
        self.position = position
    }

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        guard position < capacity, let base else {
            overflowed = true
            return
        }
        base.storeBytes(of: value, toByteOffset: position, as: UInt8.self)
        position += 1
    }

    @inline(__always)
    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            byte(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        byte(UInt8(value))
    }

    @inline(__always)
    mutating func signedVarint(_ value: Int64) {
        varint(zigzag(value))
    }

    mutating func bytes(_ source: UnsafeRawBufferPointer) {
        guard source.count > 0 else { return }
        guard let base, let from = source.baseAddress, capacity - position >= source.count else {
            overflowed = true
            return
        }
        (base + position).copyMemory(from: from, byteCount: source.count)
        position += source.count
    }

    /// A length-prefixed byte string.
    mutating func lengthPrefixed(_ source: UnsafeRawBufferPointer) {
        varint(UInt64(source.count))
        bytes(source)
    }

    /// A length-prefixed string, cut to `TraceFormat.maxStringBytes`.
    mutating func string(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            let count = cappedLength(utf8)
            lengthPrefixed(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(utf8)[..<count]))
        }
    }

    /// An optional string: varint 0 for `nil`, else length + 1, then the bytes.
    mutating func optionalString(_ string: String?) {
        guard var string else { return byte(0) }
        string.withUTF8 { utf8 in optionalBytes(UnsafeRawBufferPointer(utf8)) }
    }

    /// Optional bytes (a UTF-8 string): varint 0 for `nil`, else length + 1, then the bytes.
    mutating func optionalBytes(_ utf8: UnsafeRawBufferPointer?) {
        guard let utf8 else { return byte(0) }
        let count = cappedLength(utf8.assumingMemoryBound(to: UInt8.self))
        varint(UInt64(count) + 1)
        bytes(UnsafeRawBufferPointer(rebasing: utf8[..<count]))
    }

    /// Starts a record: the kind byte and one byte held for the length.
    @inline(__always)
    mutating func beginRecord(_ kind: TraceRecordKind) -> Int {
        byte(kind.rawValue)
        byte(0)
        return position
    }

    /// Ends a record begun at `payloadStart`: stores the payload length, moving the payload
    /// up when the length needs more than the one byte held for it.
    @inline(__always)
    mutating func endRecord(payloadStart: Int) {
        guard !overflowed, let base else { return }
        let length = position - payloadStart
        if length < 0x80 {
            base.storeBytes(of: UInt8(length), toByteOffset: payloadStart - 1, as: UInt8.self)
            return
        }
        let extra = varintSize(UInt64(length)) - 1
        guard capacity - position >= extra else {
            overflowed = true
            return
        }
        (base + payloadStart + extra).copyMemory(from: base + payloadStart, byteCount: length)
        var lengthWriter = TraceByteWriter(
            UnsafeMutableRawBufferPointer(start: base, count: capacity), at: payloadStart - 1)
        lengthWriter.varint(UInt64(length))
        position += extra
    }
}

/// Reads a payload, never past `end`; throws on anything malformed.
struct TraceByteReader {
    let base: UnsafeRawPointer
    var position: Int
    let end: Int

    @inline(__always)
    mutating func byte(_ field: StaticString) throws(TraceFieldError) -> UInt8 {
        guard position < end else { throw .pastEnd(field) }
        let value = base.load(fromByteOffset: position, as: UInt8.self)
        position += 1
        return value
    }

    @inline(__always)
    mutating func varint(_ field: StaticString) throws(TraceFieldError) -> UInt64 {
        guard position < end else { throw .pastEnd(field) }
        let first = base.load(fromByteOffset: position, as: UInt8.self)
        if first < 0x80 {
            position += 1
            return UInt64(first)
        }
        return try longVarint(field)
    }

    mutating func longVarint(_ field: StaticString) throws(TraceFieldError) -> UInt64 {
        // With eight bytes to read, a varint of up to eight bytes (56 bits: every time and
        // address delta a trace holds) is found and put together without a loop.
        if end - position >= 8 {
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))
            let stops = ~word & 0x8080_8080_8080_8080
            if stops != 0 {
                let length = stops.trailingZeroBitCount / 8 + 1
                let kept = length == 8 ? word : word & ((1 &<< UInt64(length * 8)) &- 1)
                // A final zero byte means a longer encoding than needed: never written, so corrupt.
                if kept >> UInt64(length * 8 - 8) == 0 { throw .badVarint(field) }
                var value = kept & 0x7F7F_7F7F_7F7F_7F7F
                value = (value & 0x007F_007F_007F_007F) | ((value & 0x7F00_7F00_7F00_7F00) >> 1)
                value = (value & 0x0000_3FFF_0000_3FFF) | ((value & 0x3FFF_0000_3FFF_0000) >> 2)
                value = (value & 0x0000_0000_0FFF_FFFF) | ((value & 0x0FFF_FFFF_0000_0000) >> 4)
                position += length
                return value
            }
        }
        // Bytes 1...9 carry 7 bits each; a 10th may only hold the top bit.
        var result: UInt64 = 0
        var shift: UInt64 = 0
        var position = self.position
        while shift < 63 {
            guard position < end else { throw .pastEnd(field) }
            let byte = base.load(fromByteOffset: position, as: UInt8.self)
            position += 1
            result |= UInt64(byte & 0x7F) &<< shift
            if byte < 0x80 {
                // A final zero byte means a longer encoding than needed: never written, so corrupt.
                if byte == 0 && shift > 0 { throw .badVarint(field) }
                self.position = position
                return result
            }
            shift += 7
        }
        guard position < end else { throw .pastEnd(field) }
        let byte = base.load(fromByteOffset: position, as: UInt8.self)
        if byte != 1 { throw .badVarint(field) }
        self.position = position + 1
        return result | 1 << 63
    }

    @inline(__always)
    mutating func signedVarint(_ field: StaticString) throws(TraceFieldError) -> Int64 {
        unzigzag(try varint(field))
    }

    // Not generic: unspecialized generics cost a metadata lookup per call in debug builds,
    // which made the fuzz test several times slower.
    mutating func varint16(_ field: StaticString) throws(TraceFieldError) -> UInt16 {
        let value = try varint(field)
        guard value <= UInt64(UInt16.max) else { throw .outOfRange(field, value) }
        return UInt16(truncatingIfNeeded: value)
    }

    mutating func varint32(_ field: StaticString) throws(TraceFieldError) -> UInt32 {
        let value = try varint(field)
        guard value <= UInt64(UInt32.max) else { throw .outOfRange(field, value) }
        return UInt32(truncatingIfNeeded: value)
    }

    mutating func bytes(_ field: StaticString, count: UInt64) throws(TraceFieldError)
        -> UnsafeRawBufferPointer
    {
        guard count <= UInt64(end - position) else { throw .pastEnd(field) }
        let result = UnsafeRawBufferPointer(start: base + position, count: Int(count))
        position += Int(count)
        return result
    }

    mutating func string(_ field: StaticString) throws(TraceFieldError) -> String {
        let count = try varint(field)
        return String(decoding: try bytes(field, count: count), as: UTF8.self)
    }

    mutating func optionalString(_ field: StaticString) throws(TraceFieldError) -> String? {
        let count = try varint(field)
        if count == 0 { return nil }
        return String(decoding: try bytes(field, count: count - 1), as: UTF8.self)
    }

    func finish() throws(TraceFieldError) {
        if position != end { throw .trailingBytes(end - position) }
    }
}

/// What is wrong inside a record's payload.
enum TraceFieldError: Error {
    case pastEnd(StaticString)
    case badVarint(StaticString)
    case outOfRange(StaticString, UInt64)
    case trailingBytes(Int)

    var reason: String {
        switch self {
        case .pastEnd(let field): "field '\(field)' runs past the record's end"
        case .badVarint(let field): "field '\(field)' is not a valid varint"
        case .outOfRange(let field, let value): "field '\(field)' has invalid value \(value)"
        case .trailingBytes(let count): "\(count) bytes left over after the last field"
        }
    }
}

@inline(__always)
func zigzag(_ value: Int64) -> UInt64 {
    UInt64(bitPattern: (value << 1) ^ (value >> 63))
}

@inline(__always)
func unzigzag(_ value: UInt64) -> Int64 {
    Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1)
}

func varintSize(_ value: UInt64) -> Int {
    max(1, (64 - value.leadingZeroBitCount + 6) / 7)
}

/// The length of `utf8` cut to `TraceFormat.maxStringBytes`, not inside a character's bytes.
@inline(__always)
func cappedLength(_ utf8: UnsafeBufferPointer<UInt8>) -> Int {
    var count = min(utf8.count, TraceFormat.maxStringBytes)
    if count < utf8.count {
        while count > 0 && utf8[count] & 0xC0 == 0x80 { count -= 1 }
    }
    return count
}

/// Whether `a` and `b` hold the same bytes, compared eight at a time (the generic
/// `elementsEqual` goes byte by byte through iterators: several times slower).
@inline(__always)
func sameBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    guard let left = a.baseAddress, let right = b.baseAddress else { return true }
    let count = a.count
    var index = 0
    while index + 8 <= count {
        if left.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            != right.loadUnaligned(fromByteOffset: index, as: UInt64.self)
        {
            return false
        }
        index += 8
    }
    while index < count {
        if left.load(fromByteOffset: index, as: UInt8.self) != right.load(fromByteOffset: index, as: UInt8.self) {
            return false
        }
        index += 1
    }
    return true
}
