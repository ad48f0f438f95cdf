/// FNV-1a, 64 bits: the one hash of bytes the package uses where a value must be the same in
/// every process and every release (a disk cache's file names, a derived trace id, span ids,
/// the classifier's exact-name table). Pure; any thread.
package enum FNV1a {
    /// The standard offset basis, the usual seed.
    package static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325

    /// The hash of `bytes`, starting from `seed`.
    @inlinable
    package static func hash(_ bytes: some Sequence<UInt8>, seed: UInt64 = offsetBasis) -> UInt64 {
        var hash = seed
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }
}
