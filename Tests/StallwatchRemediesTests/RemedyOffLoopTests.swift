// Off-loop work runs away from the loop thread and its result (or error) comes back on the
// loop exactly once, as a callout named by the call site; cancelled before it starts, it never runs.
import Dispatch
import Foundation
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch
@testable import StallwatchRemedies

@Suite struct RemedyOffLoopTests {
    struct Failure: Error, Equatable {}

    @Test func workRunsOffTheLoopAndItsResultComesBackOnTheLoopOnce() async {
        let workOnLoop = Locked<Bool?>(nil)
        let outcome = await onLoopThread { loop -> (value: Int?, onLoop: Bool, calls: Int) in
            let seen = Box<(value: Int?, onLoop: Bool, calls: Int)>((nil, false, 0))
            loop.offload({
                workOnLoop.withLock { $0 = loop.isCurrent }
                return 42
            }) { result in
                seen.value = (try? result.get(), loop.isCurrent, seen.value.calls + 1)
                loop.schedule(after: .milliseconds(50)) { _ in loop.stop() }  // a second call would land here
            }
            loop.run(mode: .default, until: .now + .seconds(10))
            return seen.value
        }
        #expect(workOnLoop.withLock { $0 } == false)
        #expect(outcome.value == 42)
        #expect(outcome.onLoop)
        #expect(outcome.calls == 1)
    }

    @Test func anErrorTheWorkThrowsReachesTheCompletion() async {
        let error = await onLoopThread { loop -> Failure? in
            let seen = Box<Failure?>(nil)
            loop.offload({ () throws -> Int in throw Failure() }) { result in
                if case .failure(let error) = result { seen.value = error as? Failure }
                loop.stop()
            }
            loop.run(mode: .default, until: .now + .seconds(10))
            return seen.value
        }
        #expect(error == Failure())
    }

    @Test func cancelledBeforeItStartsTheWorkNeverRunsAndTheCompletionSaysSo() async {
        let ran = Locked(false)
        let queue = DispatchQueue(label: "suspended")
        queue.suspend()
        let outcome = await onLoopThread { loop -> (cancelled: Bool, flagged: Bool, error: Bool) in
            let seen = Box(false)
            let task = loop.offload(on: queue, label: nil, file: #fileID, line: #line, { ran.withLock { $0 = true } }) {
                result in
                if case .failure(let error) = result { seen.value = error is CancellationError }
                loop.stop()
            }
            let cancelled = task.cancel()
            queue.resume()  // the block runs now and must find the task cancelled
            loop.run(mode: .default, until: .now + .seconds(10))
            let flagged = task.isCancelled
            usleep(50_000)
            return (cancelled, flagged, seen.value)
        }
        #expect(outcome.cancelled)
        #expect(outcome.flagged)
        #expect(outcome.error)
        #expect(ran.withLock { $0 } == false)
    }

    @Test func cancellingStartedWorkDoesNothing() async {
        let outcome = await onLoopThread { loop -> (cancelled: Bool, value: Int?) in
            let started = DispatchSemaphore(value: 0)
            let proceed = DispatchSemaphore(value: 0)
            let seen = Box<Int?>(nil)
            let task = loop.offload({ () -> Int in
                started.signal()
                proceed.wait()
                return 7
            }) { result in
                seen.value = try? result.get()
                loop.stop()
            }
            started.wait()
            let cancelled = task.cancel()
            proceed.signal()
            loop.run(mode: .default, until: .now + .seconds(10))
            return (cancelled, seen.value)
        }
        #expect(!outcome.cancelled)
        #expect(outcome.value == 7)
    }

    @Test func aSlowCompletionIsReportedAtTheCallSite() async throws {
        let line = Box<UInt>(0)
        let run = try await monitored { loop, _ in
            line.value = #line + 1
            loop.offload(label: "apply feed", { 1 }) { _ in usleep(60_000) }
        }
        let stall = try #require(run.ended.first)
        #expect(stall.callout.file == "StallwatchRemediesTests/RemedyOffLoopTests.swift")
        #expect(stall.callout.line == UInt32(line.value))
        #expect(stall.callout.label == "apply feed")
    }

    @Test func theAsyncFormReturnsTheValueAndThrowsTheError() async throws {
        let loop = MainLoop()
        let value = try await loop.offload { 6 * 7 }
        #expect(value == 42)
        await #expect(throws: Failure.self) { try await loop.offload { () throws -> Int in throw Failure() } }
    }

    @Test func theAsyncFormCancelledBeforeTheStartNeverRunsTheWork() async throws {
        let ran = Locked(false)
        let queue = DispatchQueue(label: "suspended")
        queue.suspend()
        let loop = MainLoop()
        let task = Task {
            try await loop.offload(on: queue) { () -> Int in
                ran.withLock { $0 = true }
                return 1
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        let result = await task.result
        queue.resume()
        try await Task.sleep(for: .milliseconds(50))
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(ran.withLock { $0 } == false)
    }
}
