// A throttle turns many requests into at most one run per frame tick (or interval) and always
// serves the last request; a debounce runs only the last request of a burst, after a quiet period.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch
@testable import StallwatchRemedies

@Suite struct RemedyThrottleTests {
    @Test func manyRequestsPerFrameRunAtMostOncePerTickWithTheLatestBody() async {
        let outcome = await onLoopThread { loop -> (runs: [UInt64], ticks: UInt64, requests: Int, last: Int) in
            let tickIndex = Box<UInt64>(0)
            let frames = FrameClock(loop: loop) { tick in tickIndex.value = tick.frameIndex + 1 }
            frames.start()
            let throttle = Throttle(frameClock: frames)
            let runs = Box<[UInt64]>([])  // the frame each run followed
            let last = Box(-1)
            var sent = 0
            // A request every millisecond for 300 ms: about 17 per frame.
            loop.schedule(after: .milliseconds(1), repeating: .milliseconds(1)) { timer in
                sent += 1
                let value = sent
                throttle.request {
                    runs.value.append(tickIndex.value)
                    last.value = value
                }
                if timer.fireCount == 300 {
                    timer.cancel()
                    loop.schedule(after: .milliseconds(100)) { _ in loop.stop() }
                }
            }
            loop.run(mode: .default, until: .now + .seconds(10))
            frames.stop()
            return (runs.value, frames.framesDelivered, throttle.requests, last.value)
        }
        #expect(outcome.requests == 300)
        #expect(outcome.runs.count >= 5, "\(outcome.runs)")
        #expect(outcome.runs.count <= Int(outcome.ticks), "more runs than frames")
        #expect(Set(outcome.runs).count == outcome.runs.count, "two runs after one frame tick: \(outcome.runs)")
        #expect(outcome.last == 300, "the last request was not served")
    }

    @Test func anIntervalThrottleSpacesRunsByTheInterval() async {
        let (runs, span) = await onLoopThread { loop -> (runs: [UInt64], span: UInt64) in
            let throttle = Throttle(loop: loop, minimumInterval: .milliseconds(20))
            let runs = Box<[UInt64]>([])
            let requests = Box<(first: UInt64, last: UInt64)>((0, 0))
            loop.schedule(after: .milliseconds(1), repeating: .milliseconds(1)) { timer in
                let now = MainLoop.monotonicNanos()
                requests.value = (requests.value.first == 0 ? now : requests.value.first, now)
                throttle.request { runs.value.append(MainLoop.monotonicNanos()) }
                if timer.fireCount == 100 {
                    timer.cancel()
                    loop.schedule(after: .milliseconds(60)) { _ in loop.stop() }
                }
            }
            loop.run(mode: .default, until: .now + .seconds(10))
            return (runs.value, requests.value.last - requests.value.first)
        }
        // Requests for `span` (about 100 ms, longer on a loaded machine): one run per 20 ms of
        // it, plus the first and the trailing one.
        #expect(runs.count >= 3 && runs.count <= Int(span / 20_000_000) + 2, "\(runs.count) runs in \(span) ns")
        let gaps = zip(runs.dropFirst(), runs).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= 19_900_000 }, "\(gaps)")
    }

    @Test func cancelDropsThePendingRun() async {
        let outcome = await onLoopThread { loop -> (ran: Bool, pending: Bool) in
            let throttle = Throttle(loop: loop, minimumInterval: .milliseconds(10))
            let ran = Box(false)
            throttle.request { ran.value = true }
            throttle.cancel()
            let pending = throttle.isPending
            loop.run(mode: .default, until: .now + .milliseconds(60))
            return (ran.value, pending)
        }
        #expect(!outcome.ran)
        #expect(!outcome.pending)
    }

    @Test func aDebounceRunsOnlyTheLastRequestAfterTheQuietPeriod() async {
        let outcome = await onLoopThread { loop -> (values: [Int], quietAfterLast: UInt64) in
            let debounce = Debounce(loop: loop, quietPeriod: .milliseconds(30))
            let values = Box<[Int]>([])
            let lastRequest = Box<UInt64>(0)
            let ranAt = Box<UInt64>(0)
            loop.schedule(after: .milliseconds(5), repeating: .milliseconds(5)) { timer in
                let value = Int(timer.fireCount)
                lastRequest.value = MainLoop.monotonicNanos()
                debounce.request {
                    values.value.append(value)
                    ranAt.value = MainLoop.monotonicNanos()
                }
                if timer.fireCount == 10 {
                    timer.cancel()
                    loop.schedule(after: .milliseconds(100)) { _ in loop.stop() }
                }
            }
            loop.run(mode: .default, until: .now + .seconds(10))
            return (values.value, ranAt.value &- lastRequest.value)
        }
        #expect(outcome.values == [10])
        #expect(outcome.quietAfterLast >= 30_000_000)
    }

    @Test func flushRunsNowAndCancelDrops() async {
        let outcome = await onLoopThread { loop -> (flushed: [Int], executions: Int) in
            let debounce = Debounce(loop: loop, quietPeriod: .milliseconds(20))
            let values = Box<[Int]>([])
            debounce.request { values.value.append(1) }
            debounce.flush()
            let flushed = values.value
            debounce.request { values.value.append(2) }
            debounce.cancel()
            loop.run(mode: .default, until: .now + .milliseconds(60))
            #expect(values.value == [1])
            return (flushed, debounce.executions)
        }
        #expect(outcome.flushed == [1])
        #expect(outcome.executions == 1)
    }

    @Test func periodsPastTheClocksRangeMeanNeverNotNow() async {
        // A deadline of now + an interval past UInt64 nanoseconds must not wrap into the past.
        let outcome = await onLoopThread { loop -> (throttled: [Int], debounced: Int, pending: Bool) in
            let throttle = Throttle(loop: loop, minimumInterval: .seconds(Int64.max))
            let debounce = Debounce(loop: loop, quietPeriod: .seconds(Int64.max))
            let throttled = Box<[Int]>([])
            throttle.request { throttled.value.append(1) }  // the first request runs at once
            loop.schedule(after: .milliseconds(10)) { _ in
                throttle.request { throttled.value.append(2) }  // not for 292 years
            }
            debounce.request {}
            loop.run(mode: .default, until: .now + .milliseconds(100))
            return (throttled.value, debounce.executions, debounce.isPending)
        }
        #expect(outcome.throttled == [1])
        #expect(outcome.debounced == 0)
        #expect(outcome.pending)
    }

    @Test func intervalsThatAreNotPositiveAreErrors() async {
        let child = ExitTestErrors()
        let zeroInterval = await #expect(processExitsWith: .failure) { [path = child.path as String] in
            sendStandardError(to: path)
            _ = Throttle(loop: MainLoop(), minimumInterval: .zero)
        }
        child.check(zeroInterval)
        let negativeQuietPeriod = await #expect(processExitsWith: .failure) { [path = child.path as String] in
            sendStandardError(to: path)
            _ = Debounce(loop: MainLoop(), quietPeriod: .milliseconds(-5))
        }
        child.check(negativeQuietPeriod)
    }
}
