import StallwatchCore

// The decoder's side of the byte-level encoding (TraceWire.swift in StallwatchCore writes it):
// every access is checked against the end by hand, on raw pointers, so decoding stays free of
// allocation, reference counting and array bounds checks.

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

    /// A byte that is one of `Code`'s raw values; any other byte is out of range.
    @inline(__always)
    mutating func code<Code: RawRepresentable>(_: Code.Type, _ field: StaticString) throws(TraceFieldError) -> Code
    where Code.RawValue == UInt8 {
        try decoded(field, Code.init(rawValue:))
    }

    /// A byte `decode` turns into a value; a byte it returns nil for is out of range.
    @inline(__always)
    mutating func decoded<Value>(_ field: StaticString, _ decode: (UInt8) -> Value?) throws(TraceFieldError) -> Value {
        let code = try byte(field)
        guard let value = decode(code) else { throw .outOfRange(field, UInt64(code)) }
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
        // A varint of two to eight bytes (a time, an address) with eight bytes to read, put
        // together here without a call; anything else (longer, near the end, or corrupt) is
        // read by `longVarint`.
        if end &- position >= 8 {
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))
            let stops = ~word & 0x8080_8080_8080_8080
            if stops != 0 {
                // The last byte's top bit is bit `stop`: keep the bits up to it.
                let stop = stops.trailingZeroBitCount
                let kept = word & (stops ^ (stops &- 1))
                // A final zero byte is corrupt: `longVarint` says so.
                if kept &>> UInt64(stop &- 7) != 0 {
                    position &+= (stop &+ 1) &>> 3
                    return Self.compacted(kept)
                }
            }
        }
        return try longVarint(field)
    }

    /// The value of a varint of up to eight bytes, `word` holding its bytes (little-endian)
    /// and zeros above them: each byte's low seven bits, put together.
    @inline(__always)
    static func compacted(_ word: UInt64) -> UInt64 {
        var value = word & 0x7F7F_7F7F_7F7F_7F7F
        value = (value & 0x007F_007F_007F_007F) | ((value & 0x7F00_7F00_7F00_7F00) &>> 1)
        value = (value & 0x0000_3FFF_0000_3FFF) | ((value & 0x3FFF_0000_3FFF_0000) &>> 2)
        value = (value & 0x0000_0000_0FFF_FFFF) | ((value & 0x0FFF_FFFF_0000_0000) &>> 4)
        return value
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
                position += length
                return Self.compacted(kept)
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
func unzigzag(_ value: UInt64) -> Int64 {
    Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1)
}
