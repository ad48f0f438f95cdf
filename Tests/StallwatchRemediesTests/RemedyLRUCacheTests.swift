// An LRU cache evicts strictly least-recently-used first, within both limits, and calls back outside its lock.
import Foundation
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch
@testable import StallwatchRemedies

/// Eviction callbacks, recorded from whatever thread calls them.
private final class Evictions<Key: Sendable, Value: Sendable>: Sendable {
    private let list = Locked<[(Key, Value)]>([])
    func record(_ key: Key, _ value: Value) { list.withLock { $0.append((key, value)) } }
    var keys: [Key] { list.withLock { $0.map(\.0) } }
    var all: [(Key, Value)] { list.withLock { $0 } }
}

@Suite struct RemedyLRUCacheTests {
    @Test func theCountLimitEvictsLeastRecentFirst() {
        let evictions = Evictions<Int, String>()
        let cache = LRUCache<Int, String>(countLimit: 3, onEviction: evictions.record)
        for key in 1...6 { cache.setValue("v\(key)", forKey: key) }
        #expect(evictions.keys == [1, 2, 3])
        #expect(evictions.all.map(\.1) == ["v1", "v2", "v3"])
        #expect(cache.keysByRecency == [6, 5, 4])
        #expect(cache.count == 3)
        #expect(cache.value(forKey: 1) == nil)
        #expect(cache.value(forKey: 4) == "v4")
    }

    @Test func theCostLimitEvictsLeastRecentFirstNotCheapestFirst() {
        let evictions = Evictions<String, Int>()
        let cache = LRUCache<String, Int>(totalCostLimit: 10, onEviction: evictions.record)
        cache.setValue(1, forKey: "a", cost: 5)
        cache.setValue(2, forKey: "b", cost: 1)  // cheap, but older than c: NSCache would keep it
        cache.setValue(3, forKey: "c", cost: 4)
        #expect(evictions.keys.isEmpty)
        #expect(cache.totalCost == 10)
        cache.setValue(4, forKey: "d", cost: 3)  // 13: a alone brings it back to 8
        #expect(evictions.keys == ["a"])
        cache.setValue(5, forKey: "e", cost: 6)  // 14: b (1) and c (4) go, in that order
        #expect(evictions.keys == ["a", "b", "c"])
        #expect(cache.keysByRecency == ["e", "d"])
        #expect(cache.totalCost == 9)
    }

    @Test func aHitMakesAnEntryMostRecent() {
        let evictions = Evictions<Int, Int>()
        let cache = LRUCache<Int, Int>(countLimit: 3, onEviction: evictions.record)
        for key in 1...3 { cache.setValue(key * 10, forKey: key) }
        #expect(cache.value(forKey: 1) == 10)
        #expect(cache.keysByRecency == [1, 3, 2])
        cache.setValue(40, forKey: 4)
        #expect(evictions.keys == [2])
        #expect(cache.keysByRecency == [4, 1, 3])
        #expect(cache.value(forKey: 99) == nil)  // a miss changes nothing
        #expect(cache.keysByRecency == [4, 1, 3])
    }

    @Test func replacingAKeyUpdatesValueCostAndRecencyWithoutEvictingIt() {
        let evictions = Evictions<Int, Int>()
        let cache = LRUCache<Int, Int>(countLimit: 3, totalCostLimit: 10, onEviction: evictions.record)
        cache.setValue(10, forKey: 1, cost: 2)
        cache.setValue(20, forKey: 2, cost: 2)
        cache.setValue(30, forKey: 3, cost: 2)
        cache.setValue(11, forKey: 1, cost: 5)
        #expect(cache.value(forKey: 1) == 11)
        #expect(cache.totalCost == 9)
        #expect(cache.count == 3)
        #expect(cache.keysByRecency == [1, 3, 2])
        #expect(evictions.keys.isEmpty)
        cache.setValue(12, forKey: 1, cost: 8)  // 12 in all: the least recent (2) goes, then 10 fits
        #expect(evictions.keys == [2])
        #expect(cache.keysByRecency == [1, 3])
        #expect(cache.totalCost == 10)
    }

    @Test func anItemCostingMoreThanTheLimitIsNotStoredAndIsReportedEvicted() {
        let evictions = Evictions<String, Int>()
        let cache = LRUCache<String, Int>(totalCostLimit: 10, onEviction: evictions.record)
        cache.setValue(1, forKey: "small", cost: 4)
        cache.setValue(2, forKey: "big", cost: 11)
        #expect(cache.value(forKey: "big") == nil)
        #expect(evictions.all.map(\.0) == ["big"])
        #expect(evictions.all.map(\.1) == [2])
        #expect(cache.keysByRecency == ["small"])  // nothing else was evicted to make room
        #expect(cache.totalCost == 4)
        // An oversize replacement must not leave the old value to be served as if current.
        cache.setValue(3, forKey: "small", cost: 50)
        #expect(cache.value(forKey: "small") == nil)
        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
        #expect(evictions.all.map(\.1) == [2, 3])
    }

    @Test func costsWhoseSumPassesIntMaxEvictToFitInsteadOfOverflowing() {
        let evictions = Evictions<String, Int>()
        let cache = LRUCache<String, Int>(onEviction: evictions.record)  // totalCostLimit: Int.max
        let half = Int.max / 2 + 1
        cache.setValue(1, forKey: "a", cost: half)
        cache.setValue(2, forKey: "b", cost: half)  // a + b is Int.max + 1: a goes
        #expect(evictions.keys == ["a"])
        #expect(cache.keysByRecency == ["b"])
        #expect(cache.totalCost == half)
        cache.setValue(3, forKey: "c", cost: .max)
        #expect(evictions.keys == ["a", "b"])
        cache.setValue(4, forKey: "d", cost: 0)  // exactly at the limit: nothing goes
        #expect(cache.keysByRecency == ["d", "c"])
        #expect(cache.totalCost == .max)
        cache.setValue(5, forKey: "d", cost: half)  // a replacement makes room the same way
        #expect(evictions.keys == ["a", "b", "c"])
        #expect(cache.keysByRecency == ["d"])
        #expect(cache.value(forKey: "d") == 5)
        #expect(cache.totalCost == half)
        cache.setValue(6, forKey: "e", cost: .max)
        #expect(evictions.keys == ["a", "b", "c", "d"])
        #expect(cache.keysByRecency == ["e"])
        #expect(cache.totalCost == .max)
    }

    @Test func purgeEvictsLeastRecentDownToTheGivenCost() {
        let evictions = Evictions<Int, Int>()
        let cache = LRUCache<Int, Int>(onEviction: evictions.record)
        for key in 1...5 { cache.setValue(key, forKey: key, cost: 3) }
        _ = cache.value(forKey: 1)
        cache.purge(toCost: 7)
        #expect(evictions.keys == [2, 3, 4])
        #expect(cache.keysByRecency == [1, 5])
        #expect(cache.totalCost == 6)
        cache.setValue(0, forKey: 0, cost: 0)
        cache.purge()
        #expect(evictions.keys == [2, 3, 4, 5, 1, 0])
        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
    }

    @Test func removeAndRemoveAllDoNotCallTheEvictionCallback() {
        let evictions = Evictions<Int, Int>()
        let cache = LRUCache<Int, Int>(countLimit: 4, onEviction: evictions.record)
        for key in 1...4 { cache.setValue(key, forKey: key, cost: 2) }
        #expect(cache.removeValue(forKey: 2) == 2)
        #expect(cache.removeValue(forKey: 2) == nil)
        #expect(cache.keysByRecency == [4, 3, 1])
        #expect(cache.totalCost == 6)
        cache.removeAll()
        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
        #expect(evictions.keys.isEmpty)
        cache.setValue(7, forKey: 7)  // reusable after removeAll
        #expect(cache.keysByRecency == [7])
    }

    @Test func randomOperationsMatchAReferenceModel() {
        var generator = SplitMix(seed: 0x5eed)
        let cache = LRUCache<Int, Int>(countLimit: 8, totalCostLimit: 20)
        var model: [(key: Int, value: Int, cost: Int)] = []  // most recent first
        for step in 0..<20_000 {
            let key = Int(generator.next() % 16)
            switch generator.next() % 4 {
            case 0:
                let expected = model.firstIndex { $0.key == key }.map { model[$0].value }
                #expect(cache.value(forKey: key) == expected)
                if let index = model.firstIndex(where: { $0.key == key }) {
                    model.insert(model.remove(at: index), at: 0)
                }
            case 1:
                let removed = model.firstIndex { $0.key == key }.map { model.remove(at: $0).value }
                #expect(cache.removeValue(forKey: key) == removed)
            default:
                let cost = Int(generator.next() % 8)
                cache.setValue(step, forKey: key, cost: cost)
                model.removeAll { $0.key == key }
                model.insert((key, step, cost), at: 0)
                while model.count > 8 || model.reduce(0, { $0 + $1.cost }) > 20 { model.removeLast() }
            }
            if cache.keysByRecency != model.map(\.key) {
                Issue.record("step \(step): \(cache.keysByRecency) != \(model.map(\.key))")
                return
            }
        }
        #expect(cache.totalCost == model.reduce(0) { $0 + $1.cost })
    }

    @Test func theEvictionCallbackRunsOutsideTheLockAndMayUseTheCache() {
        let holder = Locked<LRUCache<Int, Int>?>(nil)
        let observed = Locked<[Int]>([])
        let cache = LRUCache<Int, Int>(countLimit: 2) { key, _ in
            // Under the (non-recursive) lock these calls would deadlock.
            guard let cache = holder.withLock({ $0 }) else { return }
            observed.withLock { $0.append(cache.count) }
            if key == 1 { cache.setValue(100, forKey: 100) }  // evicts again, from inside the callback
        }
        holder.withLock { $0 = cache }
        let done = DispatchSemaphore(value: 0)
        Thread {
            for key in 1...3 { cache.setValue(key, forKey: key) }
            done.signal()
        }.start()
        let finished = done.wait(timeout: .now() + .seconds(20)) == .success
        #expect(finished, "setValue did not return: the eviction callback ran under the lock")
        guard finished else { return }
        #expect(observed.withLock { $0 } == [2, 2])
        #expect(cache.keysByRecency == [100, 3])
        holder.withLock { $0 = nil }
    }

    @Test func limitsMustBePositive() async {
        let child = ExitTestErrors()
        let zeroCount = await #expect(processExitsWith: .failure) { [path = child.path as String] in
            sendStandardError(to: path)
            _ = LRUCache<Int, Int>(countLimit: 0)
        }
        child.check(zeroCount)
        let negativeTotalCost = await #expect(processExitsWith: .failure) { [path = child.path as String] in
            sendStandardError(to: path)
            _ = LRUCache<Int, Int>(totalCostLimit: -1)
        }
        child.check(negativeTotalCost)
        let negativeCost = await #expect(processExitsWith: .failure) { [path = child.path as String] in
            sendStandardError(to: path)
            LRUCache<Int, Int>().setValue(1, forKey: 1, cost: -1)
        }
        child.check(negativeCost)
    }
}

/// A seeded generator so a failure reproduces.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
