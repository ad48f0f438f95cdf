import Stallwatch
import Synchronization

/// Decides, once, between "the work starts" and "the work is cancelled before it starts": one
/// compare-and-swap, so exactly one side wins without a lock. Shared by the remedies whose
/// queued work can be cancelled (`OffloadTask`, `PoolTask`). Any thread.
struct StartGate: ~Copyable, Sendable {
    private enum Phase: UInt8, AtomicRepresentable {
        case pending, started, cancelled
    }

    private let phase = Atomic<Phase>(.pending)

    /// The queue claims the work; false if it was cancelled first.
    func start() -> Bool { move(to: .started) }

    /// Cancels the work if it has not started; false if it had started or was cancelled.
    func cancel() -> Bool { move(to: .cancelled) }

    /// Whether `cancel()` won.
    var isCancelled: Bool { phase.load(ordering: .acquiring) == .cancelled }

    private func move(to next: Phase) -> Bool {
        phase.compareExchange(expected: .pending, desired: next, ordering: .acquiringAndReleasing).exchanged
    }
}
