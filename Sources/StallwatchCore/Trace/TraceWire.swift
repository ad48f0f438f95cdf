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

    /// Return addresses, innermost first: their count, the first address, then each one as a
    /// signed delta from the one before (sample frames, a lock owner's frames). Generic so each
    /// caller's collection is read in place: no allocation.
    @inline(__always)
    mutating func addresses<Addresses: Collection<UInt64>>(_ addresses: Addresses) {
        varint(UInt64(addresses.count))
        var previous: UInt64?
        for address in addresses {
            if let previous {
                signedVarint(Int64(bitPattern: address &- previous))
            } else {
                varint(address)
            }
            previous = address
        }
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

@inline(__always)
package func zigzag(_ value: Int64) -> UInt64 {
    UInt64(bitPattern: (value << 1) ^ (value >> 63))
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
///
/// For the package's modules only, as SPI (`@_spi(StallwatchPackage) import StallwatchCore`):
/// public and inlinable so the decoder in StallwatchAnalysis gets it inlined (a `package`
/// function's body is not serialised for other modules; as a call it cost `report` 1.5 % of its
/// instructions). Pure; any thread.
@_spi(StallwatchPackage) @inlinable @inline(__always)
public func sameBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
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
