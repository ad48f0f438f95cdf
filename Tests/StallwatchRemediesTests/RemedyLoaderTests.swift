// A key is loaded once however many ask, within the concurrency limit, from memory, disk or the loader, and results arrive on the loop.
import Foundation
import StallwatchCore
import StallwatchTestSupport
import Synchronization
import Testing

@testable import Stallwatch
@testable import StallwatchRemedies

/// A latch: `wait` blocks until `open` (or a generous timeout, so a broken test fails, not hangs).
final class Latch: Sendable {
    // A semaphore, not a group entered once: a latch never opened is then not a leaked,
    // unbalanced group (LeakSanitizer reports those).
    private let semaphore = DispatchSemaphore(value: 0)
    func open() { semaphore.signal() }
    /// Waits until it is open; every waiter passes once it is (each passes the signal on).
    @discardableResult
    func wait(seconds: Int = 20) -> Bool {
        guard semaphore.wait(timeout: .now() + .seconds(seconds)) == .success else { return false }
        semaphore.signal()
        return true
    }
}

/// The keys a load closure was called with, in call order.
final class LoadCalls: Sendable {
    private let list = Locked<[String]>([])
    func record(_ key: String) { list.withLock { $0.append(key) } }
    var keys: [String] { list.withLock { $0 } }
}

enum TestLoadError: Error, Equatable {
    case boom(String)
}

/// A completion's outcome as the loop thread saw it.
struct Outcome: Sendable, Equatable {
    var value: Int?
    var error: String?
    var onLoop: Bool

    init(_ result: Result<Int, any Error>, onLoop: Bool) {
        self.onLoop = onLoop
        switch result {
        case .success(let value): self.value = value
        case .failure(let error): self.error = error is CancellationError ? "cancelled" : "\(error)"
        }
    }

    static func value(_ value: Int) -> Outcome { Outcome(.success(value), onLoop: true) }
    static let cancelled = Outcome(.failure(CancellationError()), onLoop: true)
}

private func encodeInt(_ value: Int) -> [UInt8] { Array(String(value).utf8) }

private func decodeInt(_ bytes: [UInt8]) throws -> Int {
    guard let value = Int(String(decoding: bytes, as: UTF8.self)) else { throw TestLoadError.boom("decode") }
    return value
}

@Suite struct RemedyLoaderTests {
    @Test func concurrentRequestsForOneKeyShareOneLoadAndAllGetTheValueOnTheLoop() async {
        let requests = 10
        let (outcomes, calls, statistics) = await onLoopThread { loop in
            let gate = Latch()
            let calls = LoadCalls()
            let loader = Loader<Int>(loop: loop, memory: LRUCache()) { key in
                calls.record(key)
                gate.wait()
                return 42
            }
            let outcomes = Box<[Outcome]>([])
            DispatchQueue.concurrentPerform(iterations: requests) { _ in
                loader.load("k") { result in
                    outcomes.value.append(Outcome(result, onLoop: loop.isCurrent))
                    if outcomes.value.count == requests { loop.stop() }
                }
            }
            gate.open()
            loop.run(mode: .default, until: .now + .seconds(30))
            return (outcomes.value, calls.keys, loader.statistics)
        }
        #expect(calls == ["k"])
        #expect(outcomes == Array(repeating: .value(42), count: requests))
        #expect(statistics.loadsStarted == 1)
        #expect(statistics.coalesced == requests - 1)
    }

    @Test func cancellingOneOfTwoWaitersLeavesTheLoadToTheOther() async {
        let (first, second, calls, cancelledAgain, statistics) = await onLoopThread { loop in
            let gate = Latch()
            let calls = LoadCalls()
            let loader = Loader<Int>(loop: loop, memory: LRUCache()) { key in
                calls.record(key)
                gate.wait()
                return 7
            }
            let first = Box<[Outcome]>([])
            let second = Box<[Outcome]>([])
            let request = loader.load("k") { first.value.append(Outcome($0, onLoop: loop.isCurrent)) }
            loader.load("k") {
                second.value.append(Outcome($0, onLoop: loop.isCurrent))
                loop.stop()
            }
            let cancelled = request.cancel()
            gate.open()
            loop.run(mode: .default, until: .now + .seconds(30))
            return (first.value, second.value, calls.keys, cancelled && !request.cancel(), loader.statistics)
        }
        #expect(first == [.cancelled])
        #expect(second == [.value(7)])
        #expect(calls == ["k"])
        #expect(cancelledAgain, "cancel returns true once, then false")
        #expect(statistics.cancelledLoads == 0)
    }

    @Test func cancellingTheLastWaiterOfAQueuedLoadMeansItNeverRuns() async {
        let (outcomes, calls, statistics) = await onLoopThread { loop in
            let gate = Latch()
            let calls = LoadCalls()
            let loader = Loader<Int>(loop: loop, concurrencyLimit: 1, memory: LRUCache()) { key in
                calls.record(key)
                if key == "a" { gate.wait() }
                return key.utf8.count
            }
            let outcomes = Box<[String: [Outcome]]>([:])
            func record(_ key: String) -> @Sendable (Result<Int, any Error>) -> Void {
                { result in
                    outcomes.value[key, default: []].append(Outcome(result, onLoop: loop.isCurrent))
                    if key == "c" { loop.stop() }
                }
            }
            loader.load("a", completion: record("a"))  // holds the only slot
            let queued = loader.load("bb", completion: record("bb"))
            queued.cancel()
            loader.load("c", completion: record("c"))  // FIFO: would run after bb
            gate.open()
            loop.run(mode: .default, until: .now + .seconds(30))
            return (outcomes.value, calls.keys, loader.statistics)
        }
        #expect(calls == ["a", "c"])
        #expect(outcomes == ["a": [.value(1)], "bb": [.cancelled], "c": [.value(1)]])
        #expect(statistics.cancelledLoads == 1)
        #expect(statistics.loadsStarted == 2)
    }

    @Test func aRunningLoadWhoseWaitersAllCancelledIsStillCachedButDeliversNothing() async {
        let (outcomes, cached, statistics) = await onLoopThread { loop in
            let entered = Latch()
            let gate = Latch()
            let loader = Loader<Int>(loop: loop, concurrencyLimit: 1, memory: LRUCache()) { key in
                if key == "a" {
                    entered.open()
                    gate.wait()
                }
                return 5
            }
            let outcomes = Box<[String: [Outcome]]>([:])
            let request = loader.load("a") {
                outcomes.value["a", default: []].append(Outcome($0, onLoop: loop.isCurrent))
            }
            entered.wait()
            request.cancel()
            loader.load("z") {  // runs once "a" has finished and freed the slot
                outcomes.value["z", default: []].append(Outcome($0, onLoop: loop.isCurrent))
                loop.stop()
            }
            gate.open()
            loop.run(mode: .default, until: .now + .seconds(30))
            // Posts made before z's completion have run by now: any stray "a" delivery would show.
            return (outcomes.value, loader.cachedValue(forKey: "a"), loader.statistics)
        }
        #expect(outcomes == ["a": [.cancelled], "z": [.value(5)]])
        #expect(cached == 5)
        #expect(statistics.cancelledLoads == 1)
    }

    @Test func queuedLoadsStartFirstInFirstOut() async {
        let keys = (0..<8).map { "k\($0)" }
        let calls = await onLoopThread { loop in
            let gate = Latch()
            let calls = LoadCalls()
            let loader = Loader<Int>(loop: loop, concurrencyLimit: 1, memory: LRUCache()) { key in
                calls.record(key)
                gate.wait()
                return 0
            }
            for key in keys {
                loader.load(key) { _ in if key == keys.last { loop.stop() } }
            }
            gate.open()
            loop.run(mode: .default, until: .now + .seconds(30))
            return calls.keys
        }
        #expect(calls == keys)
    }

    @Test func theConcurrencyLimitIsNeverExceeded() async {
        final class Gauge: Sendable {
            let current = Atomic<Int>(0)
            let highest = Atomic<Int>(0)
        }
        let (outcomes, highest, statistics) = await onLoopThread { loop in
            let gauge = Gauge()
            let loader = Loader<Int>(loop: loop, concurrencyLimit: 3, memory: LRUCache()) { key in
                let now = gauge.current.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue
                gauge.highest.max(now, ordering: .sequentiallyConsistent)
                usleep(20_000)
                gauge.current.wrappingSubtract(1, ordering: .sequentiallyConsistent)
                return Int(key.dropFirst())!
            }
            let outcomes = Box<[Int: Outcome]>([:])
            for index in 0..<20 {
                loader.load("k\(index)") { result in
                    outcomes.value[index] = Outcome(result, onLoop: loop.isCurrent)
                    if outcomes.value.count == 20 { loop.stop() }
                }
            }
            loop.run(mode: .default, until: .now + .seconds(60))
            return (outcomes.value, gauge.highest.load(ordering: .sequentiallyConsistent), loader.statistics)
        }
        #expect(outcomes == Dictionary(uniqueKeysWithValues: (0..<20).map { ($0, Outcome.value($0)) }))
        #expect(highest <= 3)
        #expect(highest >= 2, "loads ran one at a time: the limit was not exercised")
        #expect(statistics.maxConcurrentLoads == 3)
        #expect(statistics.loadsStarted == 20)
    }

    @Test func aFreedPlaceIsNotQueuedBehindASlowLoad() async {
        // Two places: "slow" holds one for up to 1.5 s while four 20 ms loads share the other.
        // Each fast load that ends must start the next on an idle worker, not behind "slow".
        let fast = ["f1", "f2", "f3", "f4"]
        let (completions, statistics) = await onLoopThread { loop in
            let slowMayEnd = DispatchSemaphore(value: 0)
            let loader = Loader<Int>(loop: loop, concurrencyLimit: 2, memory: LRUCache()) { key in
                if key == "slow" {
                    // Released once every fast load has delivered; the timeout ends it if they
                    // are stuck behind it, and then it completes first.
                    _ = slowMayEnd.wait(timeout: .now() + .milliseconds(1500))
                } else {
                    usleep(20_000)
                }
                return key.utf8.count
            }
            let completions = Box<[String]>([])
            for key in ["slow"] + fast {
                loader.load(key) { _ in
                    completions.value.append(key)
                    if Set(completions.value).isSuperset(of: fast) { slowMayEnd.signal() }
                    if completions.value.count == fast.count + 1 { loop.stop() }
                }
            }
            loop.run(mode: .default, until: .now + .seconds(30))
            return (completions.value, loader.statistics)
        }
        #expect(completions == fast + ["slow"], "a fast load waited for the slow one")
        #expect(statistics.loadsStarted == 5)
        #expect(statistics.maxConcurrentLoads == 2)
    }

    @Test func aMemoryHitIsStillDeliveredLaterOnTheLoop() async {
        let (outcomes, inline, statistics) = await onLoopThread { loop in
            let loader = Loader<Int>(loop: loop, memory: LRUCache()) { _ in 3 }
            let outcomes = Box<[Outcome]>([])
            let inline = Box(false)
            loader.load("k") { first in
                outcomes.value.append(Outcome(first, onLoop: loop.isCurrent))
                let returned = Box(false)
                loader.load("k") { second in
                    inline.value = !returned.value
                    outcomes.value.append(Outcome(second, onLoop: loop.isCurrent))
                    loop.stop()
                }
                returned.value = true
            }
            loop.run(mode: .default, until: .now + .seconds(30))
            return (outcomes.value, inline.value, loader.statistics)
        }
        #expect(outcomes == [.value(3), .value(3)])
        #expect(!inline, "a memory hit's completion ran inside load()")
        #expect(statistics.memoryHits == 1)
        #expect(statistics.loadsStarted == 1)
    }

    @Test func aSecondLoaderFindsTheValueOnDiskWithoutLoading() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path
        let (first, second, calls, statistics) = try await onLoopThreadThrowing { loop in
            let disk = try DiskCache(directory: path)
            let writer = Loader<Int>(
                loop: loop, memory: LRUCache(), disk: disk, encode: encodeInt, decode: decodeInt
            ) { _ in 1234 }
            let first = Box<[Outcome]>([])
            writer.load("photo/1") {
                first.value.append(Outcome($0, onLoop: loop.isCurrent))
                loop.stop()
            }
            loop.run(mode: .default, until: .now + .seconds(30))

            let calls = LoadCalls()
            let reader = Loader<Int>(
                loop: loop, memory: LRUCache(), disk: try DiskCache(directory: path),
                encode: encodeInt, decode: decodeInt
            ) { key in
                calls.record(key)
                return -1
            }
            let second = Box<[Outcome]>([])
            reader.load("photo/1") { result in
                second.value.append(Outcome(result, onLoop: loop.isCurrent))
                reader.load("photo/1") {
                    second.value.append(Outcome($0, onLoop: loop.isCurrent))
                    loop.stop()
                }
            }
            loop.run(mode: .default, until: .now + .seconds(30))
            return (first.value, second.value, calls.keys, reader.statistics)
        }
        #expect(first == [.value(1234)])
        #expect(second == [.value(1234), .value(1234)])
        #expect(calls.isEmpty)
        #expect(statistics.diskHits == 1)
        #expect(statistics.memoryHits == 1)
        #expect(statistics.loadsStarted == 0)
    }

    @Test func undecodableDiskBytesCountAsAMiss() async throws {
        let directory = TemporaryDirectory()
        let disk = try DiskCache(directory: directory.path)
        try disk.store(Array("not a number".utf8), forKey: "k")
        let (outcomes, statistics, stored) = await onLoopThread { loop in
            let loader = Loader<Int>(
                loop: loop, memory: LRUCache(), disk: disk, encode: encodeInt, decode: decodeInt
            ) { _ in 99 }
            let outcomes = Box<[Outcome]>([])
            loader.load("k") {
                outcomes.value.append(Outcome($0, onLoop: loop.isCurrent))
                loop.stop()
            }
            loop.run(mode: .default, until: .now + .seconds(30))
            return (outcomes.value, loader.statistics, disk.data(forKey: "k"))
        }
        #expect(outcomes == [.value(99)])
        #expect(statistics.diskHits == 0)
        #expect(statistics.loadsStarted == 1)
        #expect(stored == Array("99".utf8), "the reloaded value replaces the bad file")
    }

    @Test func errorsReachEveryWaiterAndAreNotCached() async {
        let (outcomes, cached, calls) = await onLoopThread { loop in
            let gate = Latch()
            let calls = LoadCalls()
            let loader = Loader<Int>(loop: loop, memory: LRUCache()) { key -> Int in
                calls.record(key)
                gate.wait()
                throw TestLoadError.boom(key)
            }
            let outcomes = Box<[Outcome]>([])
            for _ in 0..<2 {
                loader.load("bad") { result in
                    outcomes.value.append(Outcome(result, onLoop: loop.isCurrent))
                    guard outcomes.value.count == 2 else { return }
                    loader.load("bad") {  // not cached: tries again
                        outcomes.value.append(Outcome($0, onLoop: loop.isCurrent))
                        loop.stop()
                    }
                }
            }
            gate.open()
            loop.run(mode: .default, until: .now + .seconds(30))
            return (outcomes.value, loader.cachedValue(forKey: "bad"), calls.keys)
        }
        let failure = Outcome(.failure(TestLoadError.boom("bad")), onLoop: true)
        #expect(outcomes == [failure, failure, failure])
        #expect(cached == nil)
        #expect(calls == ["bad", "bad"])
    }

    @Test func waitUntilIdleReturnsOnceQueuedAndRunningLoadsHaveFinished() {
        let loop = MainLoop()
        let memory = LRUCache<String, Int>()
        let loader = Loader<Int>(loop: loop, concurrencyLimit: 2, memory: memory) { key in
            usleep(30_000)
            return key.count
        }
        for index in 0..<6 { loader.load("key\(index)") { _ in } }
        // Three rounds of two 30 ms loads: the queued ones count as work still to do.
        #expect(loader.waitUntilIdle(timeout: .seconds(10)))
        #expect(loader.statistics.loadsStarted == 6)
        #expect(memory.count == 6)
        let gate = Latch()
        let blocked = Loader<Int>(loop: loop, memory: LRUCache()) { _ in
            gate.wait()
            return 1
        }
        blocked.load("stuck") { _ in }
        #expect(!blocked.waitUntilIdle(timeout: .milliseconds(50)))
        gate.open()
        #expect(blocked.waitUntilIdle(timeout: .seconds(10)))
    }

    @Test func theConcurrencyLimitMustBePositive() async {
        let child = ExitTestErrors()
        let zeroLimit = await #expect(processExitsWith: .failure) { [path = child.path as String] in
            sendStandardError(to: path)
            _ = Loader<Int>(loop: MainLoop(), concurrencyLimit: 0, memory: LRUCache()) { _ in 0 }
        }
        child.check(zeroLimit)
    }
}

@Suite struct RemedyDiskCacheTests {
    @Test func valuesSurviveANewInstanceOverTheSameDirectory() throws {
        let directory = TemporaryDirectory()
        let nested = directory.path + "/a/b/c/"
        let writer = try DiskCache(directory: nested)
        let payload = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try writer.store(payload, forKey: "big")
        try writer.store([], forKey: "empty")
        try writer.store(Array("first".utf8), forKey: "ключ/🐈")
        try writer.store(Array("second".utf8), forKey: "ключ/🐈")
        let reader = try DiskCache(directory: nested)
        #expect(reader.data(forKey: "big") == payload)
        #expect(reader.data(forKey: "empty") == [])
        #expect(reader.data(forKey: "ключ/🐈") == Array("second".utf8))
    }

    @Test func aMissingKeyIsNil() throws {
        let directory = TemporaryDirectory()
        let cache = try DiskCache(directory: directory.path)
        #expect(cache.data(forKey: "never stored") == nil)
        try cache.store([1], forKey: "stored")
        #expect(cache.data(forKey: "stored ") == nil)
    }

    /// A FIFO at an entry's path blocked `open` for ever (and with it the `Loader`'s disk
    /// queue); a link to a device or a file elsewhere is not the cache's either.
    @Test func onlyARegularFileIsAnEntryAndNothingElseIsWaitedOn() throws {
        let directory = TemporaryDirectory()
        let cache = try DiskCache(directory: directory.path)
        #expect(mkfifo(cache.path(forKey: "fifo"), 0o600) == 0)
        #expect(symlink("/dev/zero", cache.path(forKey: "device")) == 0)
        try cache.store([7], forKey: "real")
        #expect(symlink(cache.path(forKey: "real"), cache.path(forKey: "link")) == 0)
        let answered = DispatchSemaphore(value: 0)
        let results = Locked<[String: [UInt8]?]>([:])
        // On a thread of its own: before the fix the FIFO's open never returned, and a wait
        // with a generous timeout turns that into a failure instead of a hung suite.
        Thread.detachNewThread {
            for key in ["fifo", "device", "link", "real"] {
                let value = cache.data(forKey: key)
                results.withLock { $0[key] = value }
            }
            answered.signal()
        }
        #expect(answered.wait(timeout: .now() + 20) == .success, "a read of the cache blocked")
        let read = results.withLock { $0 }
        #expect(read["fifo"] == .some(nil) && read["device"] == .some(nil) && read["link"] == .some(nil))
        #expect(read["real"] == .some([7]))
    }

    @Test func concurrentAtomicWritesAreNeverTornAndLeaveNoTemporaryFiles() throws {
        let directory = TemporaryDirectory()
        let cache = try DiskCache(directory: directory.path)
        try cache.store([UInt8](repeating: 0, count: 1000), forKey: "k")
        final class Flags: Sendable {
            let torn = Atomic<Int>(0)
            let failures = Atomic<Int>(0)
            let stop = Atomic<Bool>(false)
        }
        let flags = Flags()
        let reader = Latch()
        Thread {
            while !flags.stop.load(ordering: .relaxed) {
                // Each payload is one byte value repeated 1000 + value times: a mix shows.
                if let bytes = cache.data(forKey: "k"),
                    bytes.count != 1000 + Int(bytes[0]) || bytes.contains(where: { $0 != bytes[0] })
                {
                    flags.torn.add(1, ordering: .relaxed)
                }
            }
            reader.open()
        }.start()
        DispatchQueue.concurrentPerform(iterations: 4) { writer in
            for round in 0..<50 {
                let value = UInt8(writer * 50 + round)
                do {
                    try cache.store([UInt8](repeating: value, count: 1000 + Int(value)), forKey: "k")
                } catch {
                    flags.failures.add(1, ordering: .relaxed)
                }
            }
        }
        flags.stop.store(true, ordering: .relaxed)
        #expect(reader.wait())
        #expect(flags.torn.load(ordering: .relaxed) == 0)
        #expect(flags.failures.load(ordering: .relaxed) == 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files == [DiskCache.fileName(forKey: "k")])
    }

    @Test func removeAllDeletesEntriesAndLeavesOtherFiles() throws {
        let directory = TemporaryDirectory()
        let cache = try DiskCache(directory: directory.path)
        for index in 0..<5 { try cache.store([UInt8(index)], forKey: "k\(index)") }
        #expect(FileManager.default.createFile(atPath: directory.path + "/README", contents: Data("mine".utf8)))
        try cache.removeAll()
        for index in 0..<5 { #expect(cache.data(forKey: "k\(index)") == nil) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["README"])
    }

    @Test func aDirectoryThatCannotBeCreatedThrowsASystemErrorNamingThePath() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        let file = directory.path + "/plain-file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        #expect {
            _ = try DiskCache(directory: file + "/cache")
        } throws: { error in
            guard let error = error as? SystemError else { return false }
            return error.call.contains(file) && error.errno == ENOTDIR
        }
        #expect(throws: SystemError.self) { _ = try DiskCache(directory: file) }
    }

    @Test func fileNamesAreTheFNV1a64HashOfTheKey() {
        // Pinned: a change would orphan every cache already on disk.
        #expect(DiskCache.fileName(forKey: "") == "cbf29ce484222325")
        #expect(DiskCache.fileName(forKey: "a") == "af63dc4c8601ec8c")
        #expect(DiskCache.fileName(forKey: "foobar") == "85944171f73967e8")
    }
}
