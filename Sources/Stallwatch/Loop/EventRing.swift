import StallwatchCore
import Synchronization

/// The loop thread's lock-free single-producer ring of fixed-size events for the trace
/// writer: a push is a few stores (no lock, allocation or syscall); when the writer has
/// fallen a whole ring behind, the event is dropped and counted, and the loop never waits.
final class EventRing: @unchecked Sendable {
    /// A callout, or an iteration (`CalloutDescriptor.iteration`); times are `sw_cycles()` stamps.
    struct Event {
        var descriptor: CalloutDescriptor
        var label: UInt64
        var file: UInt64
        var start: UInt64
        var end: UInt64

        /// The `label` of an iteration event whose iteration the loop counted as congested.
        static let congestedIteration: UInt64 = 1
    }

    private let slots: UnsafeMutablePointer<Event>
    private let mask: Int
    /// Written by the loop thread only. Each counter sits in its own padded object, so the
    /// producer's and the consumer's stores do not bounce one cache line between the cores.
    private let head = PaddedCounter()
    /// Written by the writer thread only.
    private let tail = PaddedCounter()
    /// The producer's last look at `tail`: it re-reads the shared one only when the ring
    /// seems full, so a push touches no line the writer writes.
    private let tailSeen = UnsafeMutablePointer<Int>.allocate(capacity: 8)
    /// Events dropped because the ring was full.
    let dropped = Atomic<UInt64>(0)

    init(capacity: Int = 1 << 16) {
        require(capacity > 0 && capacity & (capacity - 1) == 0, "capacity must be a power of two")
        slots = .allocate(capacity: capacity)
        mask = capacity - 1
        tailSeen.initialize(to: 0)
    }

    deinit {
        slots.deallocate()
        tailSeen.deallocate()
    }

    /// Loop thread.
    @inline(__always)
    func push(_ event: Event) {
        let position = head.value.load(ordering: .relaxed)
        if position &- tailSeen.pointee > mask {
            tailSeen.pointee = tail.value.load(ordering: .acquiring)
            if position &- tailSeen.pointee > mask {
                dropped.add(1, ordering: .relaxed)
                return
            }
        }
        (slots + (position & mask)).initialize(to: event)
        head.value.store(position &+ 1, ordering: .releasing)
    }

    /// How many events it holds.
    var capacity: Int { mask + 1 }

    /// Writer thread: hands every event pushed so far to `body`, oldest first; returns how
    /// many there were.
    @discardableResult
    func drain(_ body: (Event) -> Void) -> Int {
        let from = tail.value.load(ordering: .relaxed)
        let to = head.value.load(ordering: .acquiring)
        var position = from
        while position != to {
            body(slots[position & mask])
            position &+= 1
        }
        tail.value.store(to, ordering: .releasing)
        return to &- from
    }
}

/// An atomic counter alone on its cache line (the object is padded to 128 bytes).
final class PaddedCounter: Sendable {
    private let before: (Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0)
    let value = Atomic<Int>(0)
    private let after: (Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0)
}
