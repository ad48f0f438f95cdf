import Synchronization

/// The callouts that ran past the budget, as the loop thread itself timed them: the loop appends
/// one as such a callout ends, the watchdog reads them. So a stall is caught however late the
/// watchdog is scheduled, and its duration is always the loop's own two stamps.
///
/// Single producer (the loop thread), single consumer (one watchdog). Appending happens only for
/// a callout that overran (a stall), never on the per-callout path. A reader that falls
/// `capacity` entries behind loses the oldest and is told how many.
final class OverrunLog: Sendable {
    /// One overrun callout: its sequence, its start and end stamps (`sw_cycles()`), its identity.
    struct Entry: Sendable {
        var sequence: UInt64
        var startCycles: UInt64
        var endCycles: UInt64
        var callout: PublishedCallout
    }

    /// Entries kept: at least one stall a budget apart each, so a watchdog this far behind has
    /// been stopped for over a second.
    static let capacity: UInt64 = 64

    private final class Slot: Sendable {
        let sequence = Atomic<UInt64>(0)
        let startCycles = Atomic<UInt64>(0)
        let endCycles = Atomic<UInt64>(0)
        let descriptor = Atomic<UInt64>(0)
        let label = Atomic<UInt64>(0)
        let file = Atomic<UInt64>(0)
    }

    private let slots: [Slot] = (0..<OverrunLog.capacity).map { _ in Slot() }
    /// Entries appended so far; entry `n` lives in slot `n % capacity`.
    private let appended = Atomic<UInt64>(0)

    /// Where a reader that wants only what comes next starts. Any thread.
    var end: UInt64 { appended.load(ordering: .acquiring) }

    /// The loop thread: records a callout that overran (its fields first, then the count, so a
    /// reader that sees the count sees the fields).
    func append(_ entry: Entry) {
        let index = appended.load(ordering: .relaxed)
        let slot = slots[Int(index % Self.capacity)]
        // A reader that sees any of these stores sees the count that says the slot is reused.
        atomicMemoryFence(ordering: .releasing)
        slot.sequence.store(entry.sequence, ordering: .relaxed)
        slot.startCycles.store(entry.startCycles, ordering: .relaxed)
        slot.endCycles.store(entry.endCycles, ordering: .relaxed)
        slot.descriptor.store(entry.callout.descriptor.rawValue, ordering: .relaxed)
        slot.label.store(entry.callout.label, ordering: .relaxed)
        slot.file.store(entry.callout.file, ordering: .relaxed)
        appended.store(index &+ 1, ordering: .releasing)
    }

    /// The watchdog: the entries appended since `cursor`, oldest first, and how many were
    /// overwritten before it read them; advances `cursor`.
    func read(from cursor: inout UInt64) -> (entries: [Entry], lost: UInt64) {
        let head = appended.load(ordering: .acquiring)
        guard head != cursor else { return ([], 0) }
        var lost: UInt64 = 0
        if head &- cursor > Self.capacity {
            lost = head &- cursor &- Self.capacity
            cursor = head &- Self.capacity
        }
        var entries: [Entry] = []
        while cursor != head {
            let slot = slots[Int(cursor % Self.capacity)]
            let entry = Entry(
                sequence: slot.sequence.load(ordering: .relaxed),
                startCycles: slot.startCycles.load(ordering: .relaxed),
                endCycles: slot.endCycles.load(ordering: .relaxed),
                callout: PublishedCallout(
                    descriptor: CalloutDescriptor(rawValue: slot.descriptor.load(ordering: .relaxed)),
                    label: slot.label.load(ordering: .relaxed), file: slot.file.load(ordering: .relaxed)))
            // The loop may have lapped this slot while it was read: then it is lost, not torn.
            atomicMemoryFence(ordering: .acquiring)
            if appended.load(ordering: .acquiring) &- cursor >= Self.capacity {
                lost &+= 1
            } else {
                entries.append(entry)
            }
            cursor &+= 1
        }
        return (entries, lost)
    }
}
