import Stallwatch
import StallwatchCore

/// Warms the items just beyond the visible range, in the scroll direction, through a `Loader`,
/// and cancels the warm-ups whose item left that window. Loop thread only (the loader's loop);
/// it has no callbacks: a prefetched value simply lands in the loader's caches.
///
/// For visible `a..<b` the window is `b..<b+lookahead` scrolling down and
/// `max(0, a-lookahead)..<a` scrolling up; the direction comes from how the range moved since
/// the previous call (the first call assumes down). Window indices already cached or already
/// prefetching are skipped; the first index without a key (`keyForIndex` returns nil), walking
/// away from the visible range, ends the window: the data ends there (a large lookahead past the
/// end of the data stalled the loop walking empty indices). A prefetch whose index
/// leaves the window is cancelled, so a fling does not leave a queue of loads nobody will see
/// ahead of the ones the user stopped at, except when the index left the window by becoming
/// visible: the item on screen needs that load, so it is released to finish, not cancelled.
public final class Prefetcher<Value: Sendable> {
    /// Which way the visible range last moved (a value: any thread).
    public enum Direction: Sendable, Equatable {
        case down
        case up
    }

    /// How many indices beyond the visible range are warmed. Loop thread.
    public let lookahead: Int
    /// Indices inside the current window with a prefetch in flight or done. Loop thread.
    public private(set) var prefetching: Set<Int> = []
    /// Prefetch loads requested so far. Loop thread.
    public private(set) var started = 0
    /// Prefetches cancelled while still waiting for their value. Loop thread.
    public private(set) var cancelled = 0
    /// The direction of the last `visibleRangeChanged`. Loop thread.
    public private(set) var direction = Direction.down

    private let loader: Loader<Value>
    private let keyForIndex: (Int) -> String?
    private var requests: [Int: LoadRequest] = [:]
    private var previous: Range<Int>?

    /// A prefetcher warming `lookahead` (positive) indices ahead through `loader`; `keyForIndex`
    /// names an index's key (nil: nothing to load there) and is called on the loop. Loop thread.
    public init(loader: Loader<Value>, keyForIndex: @escaping (Int) -> String?, lookahead: Int = 8) {
        require(lookahead > 0, "Prefetcher lookahead must be positive, got \(lookahead)")
        self.loader = loader
        self.keyForIndex = keyForIndex
        self.lookahead = lookahead
    }

    deinit {
        for request in requests.values { request.cancel() }
    }

    /// Tells the prefetcher which indices are on screen now: it infers the direction, cancels
    /// prefetches that left the window and starts loads for the new window. Loop thread.
    public func visibleRangeChanged(_ visible: Range<Int>) {
        require(loader.loop.isCurrent, "Prefetcher must be used on its loader's loop thread")
        if let previous {
            if visible.lowerBound != previous.lowerBound {
                direction = visible.lowerBound > previous.lowerBound ? .down : .up
            } else if visible.upperBound != previous.upperBound {
                direction = visible.upperBound > previous.upperBound ? .down : .up
            }
        }
        previous = visible
        let window: Range<Int>
        switch direction {
        case .down:
            let start = max(0, visible.upperBound)
            window = start..<(start + min(lookahead, Int.max - start))
        case .up:
            let end = max(0, visible.lowerBound)
            window = max(0, end - lookahead)..<end
        }

        for index in prefetching where !window.contains(index) {
            prefetching.remove(index)
            let request = requests.removeValue(forKey: index)
            if !visible.contains(index), request?.cancel() == true { cancelled += 1 }
        }
        // Nearest first, so the first index without a key ends the walk.
        let outward: AnySequence<Int> = direction == .down ? AnySequence(window) : AnySequence(window.reversed())
        for index in outward where !prefetching.contains(index) {
            guard let key = keyForIndex(index) else { break }
            guard loader.cachedValue(forKey: key) == nil else { continue }
            prefetching.insert(index)
            requests[index] = loader.load(key) { _ in }
            started += 1
        }
    }

    /// Cancels every prefetch still waiting and forgets the window (the next call starts afresh,
    /// assuming down). Loop thread.
    public func cancelAll() {
        for request in requests.values where request.cancel() { cancelled += 1 }
        requests = [:]
        prefetching = []
        previous = nil
        direction = .down
    }
}
