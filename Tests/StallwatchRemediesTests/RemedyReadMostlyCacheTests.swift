// ReadMostlyCache readers run together and a writer runs alone (a waiting writer holds new readers back); in value(forKey:orInsert:) make runs unlocked and the first value stored wins.
import Dispatch
import Foundation
import Glibc
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch
@testable import StallwatchRemedies

/// Runs `body(index)` on `count` fresh threads at once and returns when all have finished (or
/// false after `timeout`). Fresh threads, unlike concurrentPerform's, outnumber the cores.
private func onThreads(_ count: Int, timeout: Int = 60, _ body: @escaping @Sendable (Int) -> Void) -> Bool {
    let done = DispatchGroup()
    for index in 0..<count {
        done.enter()
        Thread {
            body(index)
            done.leave()
        }.start()
    }
    return done.wait(timeout: .now() + .seconds(timeout)) == .success
}

/// Starts `body` on a fresh thread; the returned semaphore is signalled when it returns.
private func onThread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    let done = DispatchSemaphore(value: 0)
    Thread {
        body()
        done.signal()
    }.start()
    return done
}

private func finished(_ semaphore: DispatchSemaphore) -> Bool {
    semaphore.wait(timeout: .now() + .seconds(10)) == .success
}

private struct Entry: Sendable, Equatable {
    var key: Int
    var version: Int
}

private struct MakeFailed: Error {}

@Suite struct RemedyReadMostlyCacheTests {
    @Test func getSetRemoveRemoveAllAndCount() {
        let cache = ReadMostlyCache<String, Int>()
        #expect(cache.count == 0)
        #expect(cache.value(forKey: "a") == nil)
        cache.setValue(1, forKey: "a")
        cache.setValue(2, forKey: "b")
        #expect(cache.value(forKey: "a") == 1)
        #expect(cache.value(forKey: "b") == 2)
        #expect(cache.count == 2)
        cache.setValue(3, forKey: "a")
        #expect(cache.value(forKey: "a") == 3)
        #expect(cache.count == 2)
        #expect(cache.removeValue(forKey: "a") == 3)
        #expect(cache.removeValue(forKey: "a") == nil)
        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.count == 1)
        cache.removeAll()
        #expect(cache.count == 0)
        #expect(cache.value(forKey: "b") == nil)
    }

    @Test func readersRunConcurrently() {
        let cache = ReadMostlyCache<Int, Int>()
        cache.setValue(7, forKey: 1)
        let holderInside = DispatchSemaphore(value: 0)
        let othersDone = DispatchSemaphore(value: 0)
        let overlapped = Locked<Bool?>(nil)
        let holder = onThread {
            cache.withReadLock {
                holderInside.signal()
                // With an exclusive lock the other reads could not finish while this one is
                // inside: the wait would time out.
                let result = othersDone.wait(timeout: .now() + .seconds(3)) == .success
                overlapped.withLock { $0 = result }
            }
        }
        #expect(holderInside.wait(timeout: .now() + .seconds(10)) == .success)
        let seen = cache.value(forKey: 1)
        let counted = cache.count
        let present = cache.value(forKey: 1) { 8 }
        othersDone.signal()
        #expect(finished(holder))
        #expect(seen == 7)
        #expect(counted == 1)
        #expect(present == 7)
        #expect(overlapped.withLock { $0 } == true)
    }

    /// (section held, operation that must wait for it).
    @Test(arguments: [("read", "write"), ("write", "write"), ("write", "read")])
    func aWriterRunsAlone(held: String, waiting: String) {
        let cache = ReadMostlyCache<Int, Int>()
        cache.setValue(0, forKey: 1)
        let inside = DispatchSemaphore(value: 0)
        let left = Locked(false)
        let holder = onThread {
            let section = {
                inside.signal()
                usleep(100_000)
                left.withLock { $0 = true }
            }
            if held == "read" { cache.withReadLock(section) } else { cache.withWriteLock(section) }
        }
        #expect(inside.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(!cache.writerCouldEnter())
        #expect(cache.readerCouldEnter() == (held == "read"))
        if waiting == "write" { cache.setValue(1, forKey: 1) } else { _ = cache.value(forKey: 1) }
        // The operation returned, so the holder must have left its section before it ran.
        #expect(left.withLock { $0 })
        #expect(finished(holder))
    }

    @Test func aWaitingWriterHoldsNewReadersBack() {
        let cache = ReadMostlyCache<Int, Int>()
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let reader = onThread {
            cache.withReadLock {
                inside.signal()
                _ = release.wait(timeout: .now() + .seconds(10))
            }
        }
        #expect(inside.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(cache.readerCouldEnter())
        let writer = onThread { cache.setValue(1, forKey: 1) }
        // glibc's default (reader-preferring) lock would keep admitting readers here forever.
        #expect(eventually { !cache.readerCouldEnter() })
        release.signal()
        #expect(finished(reader))
        #expect(finished(writer))
        #expect(cache.value(forKey: 1) == 1)
        #expect(cache.readerCouldEnter())
    }

    @Test func orInsertCallsMakeOnlyWhenAbsentAndStoresNothingWhenItThrows() throws {
        let cache = ReadMostlyCache<String, Int>()
        cache.setValue(5, forKey: "present")
        var calls = 0
        #expect(
            cache.value(forKey: "present") {
                calls += 1
                return 6
            } == 5)
        #expect(calls == 0)
        #expect(
            cache.value(forKey: "absent") {
                calls += 1
                return 9
            } == 9)
        #expect(calls == 1)
        #expect(cache.value(forKey: "absent") == 9)
        #expect(throws: MakeFailed.self) { try cache.value(forKey: "failing") { throw MakeFailed() } }
        #expect(cache.value(forKey: "failing") == nil)
        #expect(cache.count == 2)
    }

    @Test func orInsertRunsMakeWithoutTheLock() {
        let cache = ReadMostlyCache<Int, Int>()
        var unlocked = false
        let value = cache.value(forKey: 1) {
            unlocked = cache.writerCouldEnter()
            // A maker may use the cache itself.
            cache.setValue(10, forKey: 2)
            return 1
        }
        #expect(unlocked)
        #expect(value == 1)
        #expect(cache.value(forKey: 2) == 10)
    }

    @Test func theFirstValueStoredWinsOverAnEarlierButSlowerMaker() {
        let cache = ReadMostlyCache<String, String>()
        let slowMaking = DispatchSemaphore(value: 0)
        let fastStored = DispatchSemaphore(value: 0)
        let slowResult = Locked<String?>(nil)
        let slow = onThread {
            let result = cache.value(forKey: "k") {
                slowMaking.signal()
                _ = fastStored.wait(timeout: .now() + .seconds(10))
                return "slow"
            }
            slowResult.withLock { $0 = result }
        }
        #expect(slowMaking.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(cache.value(forKey: "k") { "fast" } == "fast")
        fastStored.signal()
        #expect(finished(slow))
        #expect(slowResult.withLock { $0 } == "fast")
        #expect(cache.value(forKey: "k") == "fast")
    }

    @Test func racingOrInsertsFromManyThreadsAllReturnTheOneStoredValue() {
        let cache = ReadMostlyCache<Int, Int>()
        let keys = 100
        let makes = Locked(0)
        let returned = Locked<[Int: Set<Int>]>([:])
        DispatchQueue.concurrentPerform(iterations: 32) { caller in
            for key in 0..<keys {
                let value = cache.value(forKey: key) {
                    makes.withLock { $0 += 1 }
                    usleep(50)  // widens the window in which other callers also miss
                    return caller
                }
                returned.withLock { _ = $0[key, default: []].insert(value) }
            }
        }
        let seen = returned.withLock { $0 }
        #expect(seen.count == keys)
        for key in 0..<keys {
            #expect(seen[key]?.count == 1, "key \(key) returned \(seen[key] ?? [])")
            #expect(seen[key]?.first == cache.value(forKey: key))
        }
        #expect(cache.count == keys)
        #expect(makes.withLock { $0 } >= keys)
    }

    @Test func readersAndWritersFromManyThreadsStayConsistent() {
        let cache = ReadMostlyCache<Int, Entry>()
        let keys = 32
        let writers = 4
        let readers = 8
        let versions = 200
        let violations = Locked<[String]>([])
        let allDone = onThreads(writers + readers) { thread in
            if thread < writers {
                // Each key has one writer, so its versions only go up.
                for version in 1...versions {
                    for key in stride(from: thread, to: keys, by: writers) {
                        cache.setValue(Entry(key: key, version: version), forKey: key)
                    }
                }
                return
            }
            var latest = [Int](repeating: 0, count: keys)
            var generator = SystemRandomNumberGenerator()
            for step in 0..<4_000 {
                let key = Int.random(in: 0..<keys, using: &generator)
                // An orInsert that overwrote a newer write would show as a version going back.
                let entry =
                    step.isMultiple(of: 2)
                    ? cache.value(forKey: key) : cache.value(forKey: key) { Entry(key: key, version: 0) }
                guard let entry else { continue }
                if entry.key != key || entry.version < latest[key] || cache.count > keys {
                    let problem = "key \(key): \(entry) after version \(latest[key])"
                    violations.withLock { $0.append(problem) }
                }
                latest[key] = entry.version
            }
        }
        #expect(allDone)
        #expect(violations.withLock { $0 } == [])
        #expect(cache.count == keys)
        for key in 0..<keys {
            #expect(cache.value(forKey: key) == Entry(key: key, version: versions))
        }
    }
}
