// A seeded trace fuzzer, for the tests of the trace reader and the benchmark that fuzzes it.
import StallwatchCore

/// Damages trace bytes the way disks, truncating copies and bugs do — bit flips, changed,
/// inserted and deleted bytes, plausible record headers in the wrong place — from a seeded,
/// repeatable generator (SplitMix64). Test support, not part of any product: the package's
/// tests and its benchmark fuzz the reader the same way. A plain value; use it on one thread at
/// a time.
public struct TraceMutator: Sendable {
    private var state: UInt64

    /// A mutator whose sequence of mutations is fixed by `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A random number below `bound` (which must be positive).
    public mutating func next(below bound: UInt64) -> UInt64 { next() % bound }

    /// Applies `count` random mutations to `bytes` (never leaves it empty).
    public mutating func mutate(_ bytes: inout [UInt8], count: Int = 1) {
        for _ in 0..<count {
            if bytes.isEmpty { bytes = [0x53] }
            let position = Int(next(below: UInt64(bytes.count)))
            switch next(below: 5) {
            case 0: bytes[position] ^= 1 << UInt8(next(below: 8))
            case 1: bytes[position] = UInt8(truncatingIfNeeded: next())
            case 2:
                let inserted = (0...next(below: 8)).map { _ in UInt8(truncatingIfNeeded: next()) }
                bytes.insert(contentsOf: inserted, at: position)
            case 3:
                let removed = min(bytes.count - position, 1 + Int(next(below: 8)))
                bytes.removeSubrange(position..<(position + removed))
                if bytes.isEmpty { bytes = [0x53] }
            default:
                // A plausible record header in the wrong place: a known kind with a small length.
                bytes[position] = UInt8(1 + next(below: UInt64(TraceRecordKind.nextID - 1)))
                if position + 1 < bytes.count { bytes[position + 1] = UInt8(next(below: 40)) }
            }
        }
    }
}
