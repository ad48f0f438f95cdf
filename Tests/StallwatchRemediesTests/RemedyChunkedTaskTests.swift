// Chunked work processes every item once, in order, in slices bounded by time (not by count),
// lets other loop work run between slices, never stalls the loop near what the same work in one
// callout does, and stops on cancel.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch
@testable import StallwatchRemedies

/// Spins for `milliseconds` of wall time: an item of known cost however loaded the machine is.
func spin(milliseconds: Double) {
    let end = MainLoop.monotonicNanos() + UInt64(milliseconds * 1_000_000)
    while MainLoop.monotonicNanos() < end {}
}

@Suite struct RemedyChunkedTaskTests {
    @Test func everyItemRunsOnceInOrderAndCompletionComesOnce() async {
        let outcome = await onLoopThread { loop -> (seen: [Int], progress: [Int], outcomes: [String]) in
            let seen = Box<[Int]>([])
            let progress = Box<[Int]>([])
            let outcomes = Box<[String]>([])
            let task = ChunkedTask(
                loop: loop, items: 0..<1_000, budget: .microseconds(200),
                process: { seen.value.append($0) },
                progress: { done, total in
                    progress.value.append(done)
                    precondition(total == 1_000)
                },
                completion: { outcome in
                    outcomes.value.append("\(outcome)")
                    loop.schedule(after: .milliseconds(50)) { _ in loop.stop() }
                })
            task.start()
            task.start()  // a second start does nothing
            loop.run(mode: .default, until: .now + .seconds(10))
            return (seen.value, progress.value, outcomes.value)
        }
        #expect(outcome.seen == Array(0..<1_000))
        #expect(outcome.progress == outcome.progress.sorted() && outcome.progress.last == 1_000)
        #expect(outcome.outcomes == ["finished"])
    }

    @Test func slicesAreBoundedByTimeNotByCount() async {
        // 2 ms items against a 10 ms budget: about five per slice; 30 ms items: one per slice.
        let (fast, slow) = await onLoopThread { loop -> (ChunkStats, ChunkStats) in
            let fast = ChunkedTask(
                loop: loop, items: 0..<50, budget: .milliseconds(10), process: { _ in spin(milliseconds: 2) })
            let slow = ChunkedTask(
                loop: loop, items: 0..<4, budget: .milliseconds(10), process: { _ in spin(milliseconds: 30) })
            fast.start()
            while !fast.isFinished { loop.runOnce(timeout: .seconds(1)) }
            slow.start()
            while !slow.isFinished { loop.runOnce(timeout: .seconds(1)) }
            return (ChunkStats(fast), ChunkStats(slow))
        }
        #expect(fast.processed == 50)
        #expect(fast.slices >= 9, "at most six 2 ms items fit in a 10 ms slice")
        #expect(fast.slices <= 25, "slices batch several fast items: \(fast.slices)")
        #expect(fast.longest < .milliseconds(40), "\(fast.longest)")
        #expect(slow.slices == 4, "a slow item fills its slice alone")
    }

    @Test func otherLoopWorkRunsBetweenSlices() async {
        let processedWhenPostRan = await onLoopThread { loop -> Int in
            let task = ChunkedTask(
                loop: loop, items: 0..<20, budget: .milliseconds(4), process: { _ in spin(milliseconds: 5) })
            task.start()
            let seen = Box(-1)
            loop.schedule(after: .zero) { _ in seen.value = task.processed }
            while !task.isFinished { loop.runOnce(timeout: .seconds(1)) }
            return seen.value
        }
        #expect(processedWhenPostRan >= 0 && processedWhenPostRan <= 2, "\(processedWhenPostRan)")
    }

    @Test func chunkedWorkDoesNotStallTheLoopWhereTheSameWorkInOneCalloutDoes() async throws {
        // 100 ms of work: the run goes on 400 ms after it was started.
        let chunked = try await monitored(settle: .milliseconds(400)) { loop, _ in
            loop.schedule(after: .zero) { _ in
                let task = ChunkedTask(loop: loop, items: 0..<100, process: { _ in spin(milliseconds: 1) })
                task.start()
            }
        }
        let blocking = try await monitored { loop, _ in
            loop.post { for _ in 0..<100 { spin(milliseconds: 1) } }
        }
        // On a quiet machine the chunked run has no stall at all; on a loaded one a slice can be
        // preempted into a hitch, but never into anything near the one long callout (measured in
        // the same run, under the same load).
        let longestChunked = chunked.ended.compactMap(\.duration).max() ?? .zero
        let blockingDuration = blocking.ended.first?.duration ?? .zero
        #expect(
            longestChunked < blockingDuration / 2,
            "\(chunked.ended.count) stalls, longest \(longestChunked) vs \(blockingDuration) in one callout")
        #expect(blocking.ended.count == 1)
        #expect(blockingDuration >= .milliseconds(100))
    }

    @Test func cancelStopsBeforeTheNextItemAndCompletesOnce() async {
        let outcome = await onLoopThread { loop -> (processed: Int, outcomes: [ChunkedTask<Int>.Outcome]) in
            let outcomes = Box<[ChunkedTask<Int>.Outcome]>([])
            let holder = Box<ChunkedTask<Int>?>(nil)
            let task = ChunkedTask(
                loop: loop, items: 0..<100, budget: .seconds(1),
                process: { item in if item == 10 { holder.value?.cancel() } },
                completion: { outcomes.value.append($0) })
            holder.value = task
            task.start()
            loop.run(mode: .default, until: .now + .milliseconds(200))
            task.cancel()  // already cancelled: nothing more
            holder.value = nil  // the test's own cycle: holder -> task -> process -> holder
            return (task.processed, outcomes.value)
        }
        #expect(outcome.processed == 11)
        #expect(outcome.outcomes == [.cancelled])
    }

    @Test func aBudgetThatIsNotPositiveIsAnError() async {
        let child = ExitTestErrors()
        let zeroBudget = await #expect(processExitsWith: .failure) { [path = child.path as String] in
            sendStandardError(to: path)
            _ = ChunkedTask(loop: MainLoop(), items: [1], budget: .zero, process: { _ in })
        }
        child.check(zeroBudget)
    }
}

struct ChunkStats: Sendable {
    var processed: Int
    var slices: Int
    var longest: Duration
    init<T>(_ task: ChunkedTask<T>) {
        processed = task.processed
        slices = task.slices
        longest = task.longestSlice
    }
}
