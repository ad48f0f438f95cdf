import Synchronization

/// The loop thread's lock-free single-producer ring of fixed-size events for the trace
/// writer: a push is a few stores (no lock, allocation or syscall); when the writer has
/// fallen a whole ring behind, the event is dropped and counted, and the loop never waits.
final class EventRing: @unchecked Sendable {
    /// A callout (descriptor's low byte is its `CalloutKind`) or an iteration (low byte 0);
    /// times are `sw_cycles()` stamps.
    struct Event {
        var descriptor: UInt64
        var label: UInt64
        var file: UInt64
        var start: UInt64
        var end: UInt64
    }

    static let iterationKind: UInt64 = 0

    private let slots: UnsafeMutablePointer<Event>
    private let mask: Int
    /// Written by the loop thread only.
    private let head = Atomic<Int>(0)
    /// Written by the writer thread only.
    private let tail = Atomic<Int>(0)
    /// Events dropped because the ring was full.
    let dropped = Atomic<UInt64>(0)

    init(capacity: Int = 1 << 16) {
        precondition(capacity > 0 && capacity & (capacity - 1) == 0, "capacity must be a power of two")
        slots = .allocate(capacity: capacity)
        mask = capacity - 1
    }

    deinit { slots.deallocate() }

    /// Loop thread.
    @inline(__always)
    func push(_ event: Event) {
        let position = head.load(ordering: .relaxed)
        if position &- tail.load(ordering: .acquiring) > mask {
            dropped.add(1, ordering: .relaxed)
            return
        }
        (slots + (position & mask)).initialize(to: event)
        head.store(position &+ 1, ordering: .releasing)
    }

    /// Writer thread: hands every event pushed so far to `body`, oldest first.
    func drain(_ body: (Event) -> Void) {
        let from = tail.load(ordering: .relaxed)
        let to = head.load(ordering: .acquiring)
        var position = from
        while position != to {
            body(slots[position & mask])
            position &+= 1
        }
        tail.store(to, ordering: .releasing)
    }
}
