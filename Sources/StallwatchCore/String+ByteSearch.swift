extension String {
    /// The UTF-8 offset of the first occurrence of `needle` in this string, byte for byte (no
    /// Unicode equivalence: module paths and symbols are compared as bytes). The standard
    /// library's generic `contains`/`range(of:)` cost a tenth of a fleet report.
    ///
    /// Pure; use it on any thread.
    package func utf8Offset(of needle: StaticString) -> Int? {
        let pattern = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        guard let first = pattern.first else { return 0 }
        var copy = self
        return copy.withUTF8 { bytes -> Int? in
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
    }
}
