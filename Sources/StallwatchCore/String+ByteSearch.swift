extension String {
    /// The UTF-8 offset of the first occurrence of `needle` in this string, byte for byte (no
    /// Unicode equivalence: module paths and symbols are compared as bytes), where the standard
    /// library's `contains`/`range(of:)` would compare grapheme by grapheme.
    ///
    /// Pure; use it on any thread.
    package func utf8Offset(of needle: StaticString) -> Int? {
        var copy = self
        return copy.withUTF8 { byteOffset(of: needle, in: $0) }
    }
}

extension String {
    /// Whether this string's UTF-8 bytes from byte `offset` on start with `prefix`'s, byte for
    /// byte. `hasPrefix` on a `Substring` (a path's last component) compares characters, which
    /// made testing a frame's module the largest single cost of naming a fleet's frames.
    ///
    /// Pure; use it on any thread.
    package func utf8HasPrefix(_ prefix: String, from offset: Int = 0) -> Bool {
        var string = self
        var prefix = prefix
        return string.withUTF8 { bytes in
            prefix.withUTF8 { pattern in
                guard offset >= 0, bytes.count - offset >= pattern.count else { return false }
                return sameBytes(
                    UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[offset..<(offset + pattern.count)]),
                    UnsafeRawBufferPointer(pattern))
            }
        }
    }

    /// Whether this string's UTF-8 bytes end with `suffix`'s, byte for byte. Pure; any thread.
    package func utf8HasSuffix(_ suffix: String) -> Bool {
        utf8HasPrefix(suffix, from: utf8.count - suffix.utf8.count)
    }
}

extension Substring {
    /// As `String.utf8Offset(of:)`, in this substring (from its start). Pure; any thread.
    package func utf8Offset(of needle: StaticString) -> Int? {
        var copy = self
        return copy.withUTF8 { byteOffset(of: needle, in: $0) }
    }
}

/// The offset of the first occurrence of `needle` in `bytes`, compared byte for byte.
private func byteOffset(of needle: StaticString, in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    let pattern = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
    guard let first = pattern.first else { return 0 }
    guard bytes.count >= pattern.count else { return nil }
    var index = 0
    let last = bytes.count - pattern.count
    while index <= last {
        if bytes[index] == first {
            var matched = 1
            while matched < pattern.count && bytes[index + matched] == pattern[matched] { matched += 1 }
            if matched == pattern.count { return index }
        }
        index += 1
    }
    return nil
}
