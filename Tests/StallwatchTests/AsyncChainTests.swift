// A stall in async code names the awaits that led to it: a request handler awaits a service that
// awaits a repository that blocks the pool thread; every sample of the blocker names the
// blocking call, the repository, the service and the handler, innermost first, the awaiting
// callers marked async and named by their function, with no "partial function" text.
import Foundation
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

/// Three async layers over a blocking call, each a real suspension point away from the next:
/// the repository yields before it blocks, so when it runs again its callers live only in
/// their async contexts, not on the stack.
enum AsyncChainFixture {
    @inline(never) static func handleRequest(milliseconds: UInt32, spin: Bool) async -> Int {
        let rows = await service(milliseconds: milliseconds, spin: spin)
        return rows &+ 1
    }

    @inline(never) static func service(milliseconds: UInt32, spin: Bool) async -> Int {
        let rows = await repository(milliseconds: milliseconds, spin: spin)
        return rows &* 2
    }

    @inline(never) static func repository(milliseconds: UInt32, spin: Bool) async -> Int {
        await Task.yield()
        loadRowsBlocking(milliseconds: milliseconds, spin: spin)
        return 3
    }

    /// The blocking call: a sleep (the stack scan samples it) or a spin (the signal does).
    @inline(never) static func loadRowsBlocking(milliseconds: UInt32, spin: Bool) {
        if spin { spinForStallTest(milliseconds: UInt64(milliseconds)) } else { usleep(milliseconds * 1000) }
    }

    /// A task group's owner whose children each block: a child's chain ends at its own root, the
    /// group's child closure, which is named after the owner (`closure #1 in … groupOwner`).
    @inline(never) static func groupOwner(children: Int, milliseconds: UInt32) async -> Int {
        await withTaskGroup(of: Int.self) { group in
            for _ in 0..<children {
                group.addTask { await repository(milliseconds: milliseconds, spin: false) }
            }
            return await group.reduce(0, +)
        }
    }

    /// The four functions as a sample names them, innermost first.
    static let names = [
        "AsyncChainFixture.loadRowsBlocking", "AsyncChainFixture.repository", "AsyncChainFixture.service",
        "AsyncChainFixture.handleRequest",
    ]
}

@Suite(.serialized) struct AsyncChainTests {
    /// Starves the pool with request handlers that block, and returns the samples of its longest
    /// stall that caught the blocking call.
    private func blockedSamples(spin: Bool) async throws -> (all: Int, blocked: [Sample]) {
        let harness = try PoolHarness()
        await harness.settle()
        let requests = (0..<(3 * PoolMonitorTests.width)).map { _ in
            Task.detached { _ = await AsyncChainFixture.handleRequest(milliseconds: 150, spin: spin) }
        }
        // Every request done: the pool's stalls are over (or delivered unfinished by stop()).
        for request in requests { await request.value }
        #expect(await harness.eventually { !harness.ended.withLock({ $0 }).isEmpty })
        harness.monitor.stop()
        let longest = try #require(harness.ended.withLock { $0 }.max { $0.durationNanos < $1.durationNanos })
        let blocked = longest.samples.filter { sample in
            sample.frames.contains { $0.symbol?.contains(AsyncChainFixture.names[0]) == true }
        }
        return (longest.samples.count, blocked)
    }

    /// Where each of the four functions first appears in `sample` (by the name a reader sees),
    /// and whether the awaiting callers are marked async.
    private func check(_ sample: Sample) -> String? {
        let names = sample.frames.map { $0.symbol.map { String(Frame.standsFor($0)) } ?? "?" }
        let positions = AsyncChainFixture.names.map { name in names.firstIndex { $0.contains(name) } }
        let described = "\(sample.source): " + names.prefix(12).joined(separator: " ← ")
        guard positions.allSatisfy({ $0 != nil }) else { return "missing a caller: \(described)" }
        let order = positions.compactMap { $0 }
        guard order == order.sorted(), Set(order).count == 4 else { return "out of order: \(described)" }
        guard sample.frames[order[2]].isAsync, sample.frames[order[3]].isAsync else {
            return "callers not marked async: \(described)"
        }
        guard !names.contains(where: { $0.contains("partial function") }) else {
            return "partial function text: \(described)"
        }
        guard sample.asyncChainEnd == .taskRoot else { return "chain end \(String(describing: sample.asyncChainEnd))" }
        return nil
    }

    @Test(
        .timeLimit(.minutes(1)),
        .disabled(
            if: Sanitizer.address,
            "ASan's usleep interceptor hides the blocker's frame from the stack scan of a sleeping thread"))
    func aSleepingAsyncJobsSamplesNameItsAwaitingCallersInnermostFirst() async throws {
        let (all, blocked) = try await blockedSamples(spin: false)
        #expect(blocked.count >= all / 2, "\(blocked.count) of \(all) samples caught the blocking call")
        let failures = blocked.compactMap(check)
        let allNamed = failures.isEmpty
        #expect(allNamed, "\(failures.count) of \(blocked.count): \(failures.prefix(3))")
    }

    @Test(
        .timeLimit(.minutes(1)),
        .disabled(
            if: Sanitizer.address,
            "ASan's usleep interceptor hides the blocker's frame from the stack scan of a sleeping thread"))
    func aTaskGroupChildsSamplesNameItsChainAndTheGroupsOwner() async throws {
        let harness = try PoolHarness()
        await harness.settle()
        let owner = Task.detached {
            _ = await AsyncChainFixture.groupOwner(children: 3 * PoolMonitorTests.width, milliseconds: 150)
        }
        // The whole group done: the pool's stalls are over (or delivered unfinished by stop()).
        await owner.value
        #expect(await harness.eventually { !harness.ended.withLock({ $0 }).isEmpty })
        harness.monitor.stop()
        let longest = try #require(harness.ended.withLock { $0 }.max { $0.durationNanos < $1.durationNanos })
        let blocked = longest.samples.filter { sample in
            sample.frames.contains { $0.symbol?.contains(AsyncChainFixture.names[0]) == true }
        }
        #expect(blocked.count >= longest.samples.count / 2, "\(blocked.count) of \(longest.samples.count)")
        let failures = blocked.compactMap { sample -> String? in
            let names = sample.frames.map { $0.symbol.map { String(Frame.standsFor($0)) } ?? "?" }
            let described = names.prefix(10).joined(separator: " ← ")
            guard let repository = names.firstIndex(where: { $0.contains("AsyncChainFixture.repository") }),
                let owner = names.firstIndex(where: {
                    $0.contains("in static StallwatchTests.AsyncChainFixture.groupOwner")
                }),
                repository < owner, sample.frames[owner].isAsync
            else { return described }
            return sample.asyncChainEnd == .taskRoot ? nil : "end: \(described)"
        }
        let allNamed = failures.isEmpty
        #expect(allNamed, "\(failures.count) of \(blocked.count): \(failures.prefix(3))")
    }

    @Test(
        .timeLimit(.minutes(1)),
        .disabled(if: Sanitizer.thread, "TSan delivers the sampling signal late, away from the running culprit"))
    func aSpinningAsyncJobsSamplesNameItsAwaitingCallersInnermostFirst() async throws {
        let (all, blocked) = try await blockedSamples(spin: true)
        #expect(!blocked.isEmpty, "none of \(all) samples caught the spinning call")
        let failures = blocked.compactMap(check)
        let allNamed = failures.isEmpty
        #expect(allNamed, "\(failures.count) of \(blocked.count): \(failures.prefix(3))")
    }
}
