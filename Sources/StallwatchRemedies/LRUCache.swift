import Stallwatch
import StallwatchCore

/// A count- and cost-limited cache that evicts strictly least-recently-used first, with O(1)
/// lookups and inserts. Any thread: one internal lock guards all state.
///
/// Foundation's `NSCache` on Linux evicts the cheapest entries first, walks its whole list on
/// every insert and gives no ordering guarantee; this cache is the predictable replacement.
///
/// `onEviction` is called for entries the cache drops on its own: to respect a limit, because an
/// item alone is over `totalCostLimit`, or by `purge(toCost:)`. It is not called for entries the
/// caller removes (`removeValue`, `removeAll`) or replaces (`setValue` on an existing key). It
/// runs after the lock is released, on the thread whose call caused the eviction, once per
/// entry, least recent first; it may call back into the cache.
public final class LRUCache<Key: Hashable & Sendable, Value: Sendable>: @unchecked Sendable {
    /// The most entries the cache keeps. Any thread.
    public let countLimit: Int
    /// The largest sum of entry costs the cache keeps. Any thread.
    ///
    /// The sum never passes it, not even for a moment: an insert evicts to make room before it
    /// adds its cost. So costs up to `Int.max` are exact (neither saturated nor wrapped): with
    /// the default limit, `Int.max`, entries whose costs would sum past it evict the least recent
    /// ones instead of overflowing.
    public let totalCostLimit: Int

    private let state: Locked<LRUList<Key, Value>>
    private let onEviction: (@Sendable (Key, Value) -> Void)?

    /// A cache holding at most `countLimit` entries whose costs sum to at most `totalCostLimit`.
    /// Both limits must be positive. Any thread; `onEviction` runs on the evicting thread, outside
    /// the lock.
    public init(
        countLimit: Int = .max, totalCostLimit: Int = .max,
        onEviction: (@Sendable (Key, Value) -> Void)? = nil
    ) {
        require(countLimit > 0, "LRUCache countLimit must be positive, got \(countLimit)")
        require(totalCostLimit > 0, "LRUCache totalCostLimit must be positive, got \(totalCostLimit)")
        self.countLimit = countLimit
        self.totalCostLimit = totalCostLimit
        self.onEviction = onEviction
        state = Locked(LRUList())
    }

    /// The value for `key`, if cached; a hit makes the entry the most recent. Any thread.
    public func value(forKey key: Key) -> Value? {
        state.withLock { list in
            guard let slot = list.index[key] else { return nil }
            list.moveToFront(slot)
            return list.nodes[slot]!.value
        }
    }

    /// Stores `value` as the most recent entry (replacing any entry for `key`, with its new cost),
    /// evicting least-recent entries first until it fits within both limits. An item whose `cost`
    /// alone exceeds `totalCostLimit` is not stored: it is reported to `onEviction` at once, and
    /// an older entry for `key` is removed so a stale value is never served. `cost` must not be
    /// negative; any cost up to `Int.max` is exact (see `totalCostLimit`).
    /// Any thread; `onEviction` runs on this thread after the lock is released.
    public func setValue(_ value: Value, forKey key: Key, cost: Int = 1) {
        require(cost >= 0, "LRUCache cost must not be negative, got \(cost)")
        // The replaced value is released after unlocking too: its deinit is user code.
        let (victims, replaced): ([(Key, Value)], Value?) = state.withLock { list in
            let replaced = list.index[key].map { list.remove($0).1 }
            if cost > totalCostLimit { return ([(key, value)], replaced) }
            // Room first, then the cost: `totalCost + cost` could pass Int.max, while
            // `totalCostLimit - cost` is at least 0. The loop stops before the list is empty.
            let room = totalCostLimit - cost
            var victims: [(Key, Value)] = []
            while list.count >= countLimit || list.totalCost > room {
                victims.append(list.removeLast())
            }
            list.insertAtFront(key: key, value: value, cost: cost)
            return (victims, replaced)
        }
        _ = consume replaced
        report(victims)
    }

    /// Removes the entry for `key` and returns its value; `onEviction` is not called. Any thread.
    @discardableResult
    public func removeValue(forKey key: Key) -> Value? {
        state.withLock { list in
            guard let slot = list.index[key] else { return nil }
            return list.remove(slot).1
        }
    }

    /// Evicts least-recent entries until the total cost is at most `toCost` (0: empties the
    /// cache): the hook for memory pressure. Any thread; `onEviction` runs on this thread after
    /// the lock is released.
    public func purge(toCost: Int = 0) {
        require(toCost >= 0, "LRUCache purge toCost must not be negative, got \(toCost)")
        let victims: [(Key, Value)] = state.withLock { list in
            var victims: [(Key, Value)] = []
            while list.totalCost > toCost || (toCost == 0 && list.count > 0) {
                victims.append(list.removeLast())
            }
            return victims
        }
        report(victims)
    }

    /// Removes every entry; `onEviction` is not called. Any thread.
    public func removeAll() {
        // Swapped out so the values are released after unlocking.
        let old = state.withLock { list in
            let old = list
            list = LRUList()
            return old
        }
        _ = consume old
    }

    /// The number of entries. Any thread.
    public var count: Int { state.withLock { $0.count } }

    /// The sum of the entries' costs. Any thread.
    public var totalCost: Int { state.withLock { $0.totalCost } }

    /// The keys, most recent first (for tests; O(n)). Any thread.
    var keysByRecency: [Key] {
        state.withLock { list in
            var keys: [Key] = []
            keys.reserveCapacity(list.count)
            var slot = list.head
            while slot != LRUList<Key, Value>.none {
                keys.append(list.nodes[slot]!.key)
                slot = list.nodes[slot]!.next
            }
            return keys
        }
    }

    private func report(_ victims: [(Key, Value)]) {
        guard let onEviction else { return }
        for (key, value) in victims { onEviction(key, value) }
    }
}

/// A doubly linked list threaded through an array of nodes by index, plus a key → slot table.
/// Freed slots are reused, so a warm cache inserts without growing the array. Guarded by the
/// cache's lock.
struct LRUList<Key: Hashable, Value> {
    struct Node {
        var key: Key
        var value: Value
        var cost: Int
        var previous: Int
        var next: Int
    }

    static var none: Int { -1 }

    // A freed slot is nil so an evicted value is released at once (purge must free memory now),
    // not when the slot is reused.
    var nodes: [Node?] = []
    var free: [Int] = []
    var index: [Key: Int] = [:]
    var head = LRUList.none
    var tail = LRUList.none
    /// At most the cache's `totalCostLimit`: `LRUCache.setValue` evicts before it inserts.
    var totalCost = 0

    var count: Int { index.count }

    mutating func insertAtFront(key: Key, value: Value, cost: Int) {
        let node = Node(key: key, value: value, cost: cost, previous: Self.none, next: head)
        let slot: Int
        if let reused = free.popLast() {
            slot = reused
            nodes[slot] = node
        } else {
            slot = nodes.count
            nodes.append(node)
        }
        if head != Self.none { nodes[head]!.previous = slot }
        head = slot
        if tail == Self.none { tail = slot }
        index[key] = slot
        totalCost += cost
    }

    mutating func moveToFront(_ slot: Int) {
        guard slot != head else { return }
        unlink(slot)
        nodes[slot]!.previous = Self.none
        nodes[slot]!.next = head
        nodes[head]!.previous = slot
        head = slot
    }

    /// Unlinks the least recent entry and returns it. The list must not be empty.
    mutating func removeLast() -> (Key, Value) {
        remove(tail)
    }

    @discardableResult
    mutating func remove(_ slot: Int) -> (Key, Value) {
        unlink(slot)
        let node = nodes[slot]!
        nodes[slot] = nil
        index[node.key] = nil
        totalCost -= node.cost
        free.append(slot)
        return (node.key, node.value)
    }

    private mutating func unlink(_ slot: Int) {
        let previous = nodes[slot]!.previous
        let next = nodes[slot]!.next
        if previous != Self.none { nodes[previous]!.next = next } else { head = next }
        if next != Self.none { nodes[next]!.previous = previous } else { tail = previous }
    }
}
