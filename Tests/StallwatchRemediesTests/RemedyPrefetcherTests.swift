// A prefetcher warms the window ahead in the scroll direction, skips what is cached, and cancels what left the window.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch
@testable import StallwatchRemedies

/// A loader with one slot whose load of `blocked` waits for `gate`, recording each key loaded.
private struct Harness {
    let loader: Loader<Int>
    let calls = LoadCalls()
    let gate = Latch()
    let memory = LRUCache<String, Int>()

    init(loop: MainLoop, blocked: String? = nil) {
        let calls = calls
        let gate = gate
        loader = Loader(loop: loop, concurrencyLimit: 1, memory: memory) { key in
            calls.record(key)
            if key == blocked { gate.wait() }
            return Int(key.dropFirst(4))!
        }
    }

    /// Runs the loop until `key` is loaded (the slot is FIFO, so everything queued before it is
    /// done too); false on timeout.
    func runUntilLoaded(_ key: String, on loop: MainLoop) -> Bool {
        loader.load(key) { _ in loop.stop() }
        return loop.run(mode: .default, until: .now + .seconds(30)) == .stopped
    }
}

private func item(_ index: Int) -> String { "item\(index)" }

@Suite struct RemedyPrefetcherTests {
    @Test func scrollingDownPrefetchesBelowTheVisibleRange() async {
        let (first, second, direction, counts, calls) = await onLoopThread { loop in
            let harness = Harness(loop: loop)
            let prefetcher = Prefetcher(loader: harness.loader, keyForIndex: item, lookahead: 4)
            prefetcher.visibleRangeChanged(0..<8)
            let first = prefetcher.prefetching
            prefetcher.visibleRangeChanged(2..<10)
            let loaded = harness.runUntilLoaded(item(13), on: loop)
            return (
                first, prefetcher.prefetching, prefetcher.direction, [prefetcher.started, prefetcher.cancelled],
                loaded ? harness.calls.keys : []
            )
        }
        #expect(first == Set(8..<12))
        #expect(second == Set(10..<14))
        #expect(direction == .down)
        #expect(counts == [6, 0])
        #expect(calls == (8..<14).map(item))
    }

    @Test func scrollingUpPrefetchesAboveAndCancelsTheWindowBelowBeforeItLoads() async {
        let (prefetching, direction, counts, calls) = await onLoopThread { loop in
            let harness = Harness(loop: loop, blocked: item(48))
            let prefetcher = Prefetcher(loader: harness.loader, keyForIndex: item, lookahead: 4)
            prefetcher.visibleRangeChanged(40..<48)  // first call: down, 48..<52; 48 holds the slot
            prefetcher.visibleRangeChanged(38..<46)  // up: 34..<38; 48...51 left the window
            harness.gate.open()
            let loaded = harness.runUntilLoaded(item(34), on: loop)  // the last to load
            return (
                prefetcher.prefetching, prefetcher.direction, [prefetcher.started, prefetcher.cancelled],
                loaded ? harness.calls.keys : []
            )
        }
        #expect(prefetching == Set(34..<38))
        #expect(direction == .up)
        #expect(counts == [8, 4])
        // 48 was already running (it finishes, nobody is told); 49...51 were queued and never ran.
        // Scrolling up, the nearest index above the screen loads first.
        #expect(calls == [item(48)] + (34..<38).reversed().map(item))
    }

    @Test func cachedKeysAreNotLoadedAgain() async {
        let (prefetching, started, calls) = await onLoopThread { loop in
            let harness = Harness(loop: loop)
            harness.memory.setValue(9, forKey: item(9))
            let prefetcher = Prefetcher(loader: harness.loader, keyForIndex: item, lookahead: 4)
            prefetcher.visibleRangeChanged(0..<8)
            prefetcher.visibleRangeChanged(0..<8)  // no movement: nothing new
            guard harness.runUntilLoaded(item(11), on: loop) else { return (Set<Int>(), -1, [String]()) }
            prefetcher.visibleRangeChanged(1..<9)  // 9 is cached, 10 and 11 done: only 12 is new
            guard harness.runUntilLoaded(item(12), on: loop) else { return (Set<Int>(), -1, [String]()) }
            return (prefetcher.prefetching, prefetcher.started, harness.calls.keys)
        }
        #expect(prefetching == [10, 11, 12])
        #expect(started == 4)
        #expect(calls == [item(8), item(10), item(11), item(12)])
    }

    @Test func indicesWithoutAKeyAreSkippedAndTheWindowAboveStopsAtZero() async {
        let (below, above, direction, calls) = await onLoopThread { loop in
            let harness = Harness(loop: loop)
            let prefetcher = Prefetcher(
                loader: harness.loader, keyForIndex: { $0 < 10 ? item($0) : nil }, lookahead: 4)
            prefetcher.visibleRangeChanged(4..<8)
            let below = prefetcher.prefetching
            prefetcher.visibleRangeChanged(2..<6)
            let loaded = harness.runUntilLoaded(item(0), on: loop)  // the farthest: the last to load
            return (below, prefetcher.prefetching, prefetcher.direction, loaded ? Set(harness.calls.keys) : [])
        }
        #expect(below == [8, 9])
        #expect(above == [0, 1])
        #expect(direction == .up)
        #expect(calls.isSuperset(of: [item(0), item(1)]))
        #expect(calls.isSubset(of: [item(0), item(1), item(8), item(9)]))
    }

    /// A lookahead of 10,000,000 past 10 items asked for 10,000,000 keys on the loop (929 ms):
    /// the first index without a key ends the window.
    @Test func theWindowEndsWhereTheDataEnds() async {
        let (asked, prefetching) = await onLoopThread { loop in
            let harness = Harness(loop: loop)
            let asked = Box(0)
            let prefetcher = Prefetcher(
                loader: harness.loader,
                keyForIndex: { index in
                    asked.value += 1
                    return index < 10 ? item(index) : nil
                }, lookahead: 10_000_000)
            prefetcher.visibleRangeChanged(4..<8)
            return (asked.value, prefetcher.prefetching)
        }
        #expect(asked == 3)  // 8, 9, and 10, the end
        #expect(prefetching == [8, 9])
    }

    @Test func aPrefetchWhoseItemBecameVisibleIsReleasedNotCancelled() async {
        let (prefetching, counts, calls) = await onLoopThread { loop in
            let harness = Harness(loop: loop, blocked: item(4))
            let prefetcher = Prefetcher(loader: harness.loader, keyForIndex: item, lookahead: 4)
            prefetcher.visibleRangeChanged(0..<4)  // 4..<8: 4 holds the slot, 5...7 queued
            prefetcher.visibleRangeChanged(4..<8)  // 4...7 are on screen now: they must still load
            harness.gate.open()
            let loaded = harness.runUntilLoaded(item(11), on: loop)
            return (
                prefetcher.prefetching, [prefetcher.started, prefetcher.cancelled], loaded ? harness.calls.keys : []
            )
        }
        #expect(prefetching == Set(8..<12))
        #expect(counts == [8, 0])
        #expect(calls == (4..<12).map(item))
    }

    @Test func cancelAllWithdrawsEveryWaitingPrefetch() async {
        let (prefetching, counts, calls) = await onLoopThread { loop in
            let harness = Harness(loop: loop, blocked: item(8))
            let prefetcher = Prefetcher(loader: harness.loader, keyForIndex: item, lookahead: 4)
            prefetcher.visibleRangeChanged(0..<8)
            prefetcher.cancelAll()
            harness.gate.open()
            let loaded = harness.runUntilLoaded(item(99), on: loop)
            return (
                prefetcher.prefetching, [prefetcher.started, prefetcher.cancelled], loaded ? harness.calls.keys : []
            )
        }
        #expect(prefetching.isEmpty)
        #expect(counts == [4, 4])
        #expect(calls == [item(8), item(99)])
    }

    @Test func theLookaheadMustBePositive() async {
        let child = ExitTestErrors()
        let zeroLookahead = await #expect(processExitsWith: .failure) { [path = child.path as String] in
            sendStandardError(to: path)
            let loader = Loader<Int>(loop: MainLoop(), memory: LRUCache()) { _ in 0 }
            _ = Prefetcher(loader: loader, keyForIndex: { _ in nil }, lookahead: 0)
        }
        child.check(zeroLookahead)
    }
}
