/// A callout's identity in one word, the layout the loop publishes on the `CalloutBoard` and
/// pushes into the recorder's `EventRing`: `kind | phase << 8 | mode << 16 | line << 32`.
/// Packed and unpacked only here. A zero kind byte marks an iteration event in the ring
/// (`CalloutKind` raw values start at 1). A plain value; any thread.
import StallwatchCore

struct CalloutDescriptor: Hashable, Sendable {
    /// The packed word.
    var rawValue: UInt64

    init(rawValue: UInt64) { self.rawValue = rawValue }

    @inline(__always)
    init(kind: CalloutKind, phase: LoopActivity, mode: MainLoop.Mode, line: UInt32) {
        rawValue = UInt64(kind.rawValue) | UInt64(phase.rawValue) << 8 | UInt64(mode.id) << 16 | UInt64(line) << 32
    }

    /// The ring's marker for "an iteration ended" (kind byte 0), not a callout.
    static let iteration = CalloutDescriptor(rawValue: 0)

    /// Whether this is the ring's iteration marker rather than a callout.
    var isIteration: Bool { kindCode == 0 }

    /// The kind byte as stored (`CalloutKind.rawValue`, 0 for an iteration).
    var kindCode: UInt8 { UInt8(truncatingIfNeeded: rawValue) }

    /// The callout's kind (`.post` for a byte no kind has, which the loop never writes).
    var kind: CalloutKind { CalloutKind(rawValue: kindCode) ?? .post }

    /// The loop phase the callout ran in (`.beforeSources` for a byte no phase has).
    var phase: LoopActivity { LoopActivity(rawValue: UInt8(truncatingIfNeeded: rawValue >> 8)) ?? .beforeSources }

    /// The mode the loop ran in.
    var mode: MainLoop.Mode { MainLoop.Mode(id: UInt16(truncatingIfNeeded: rawValue >> 16)) }

    /// The line the work was registered at.
    var line: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 32) }
}
