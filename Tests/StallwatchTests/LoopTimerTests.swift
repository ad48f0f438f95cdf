// Timers fire in deadline order (ties in registration order), never early, and a repeating
// timer stays on its grid: fires the loop was too busy for are skipped and counted. A deadline
// or timeout already past returns at once.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite struct LoopTimerTests {
    /// A deadline that passed less than a second ago is a negative duration of zero whole
    /// seconds (its sign only in the attoseconds): the loop times out at once instead of trapping.
    @Test func aDeadlineAlreadyPastTimesOutAtOnce() async {
        let results = await onLoopThread { loop -> [MainLoop.RunResult] in
            let pending = loop.schedule(after: .seconds(60)) { _ in }
            defer { pending.cancel() }
            return [
                loop.run(mode: .default, until: .now - .milliseconds(500)),
                loop.run(mode: .default, until: .now - .seconds(3)),
                loop.runOnce(timeout: .milliseconds(-500)),
            ]
        }
        #expect(results == [.timedOut, .timedOut, .timedOut])
    }

    @Test func timersFireInDeadlineThenRegistrationOrder() async {
        let order = await onLoopThread { loop -> [String] in
            var order: [String] = []
            loop.schedule(after: .milliseconds(30)) { _ in order.append("30") }
            loop.schedule(after: .milliseconds(10)) { _ in order.append("10") }
            let tie = MainLoop.monotonicNanos() + 20_000_000
            for name in ["20a", "20b", "20c"] {
                _ = loop.schedule(
                    at: tie, intervalNanos: nil, toleranceNanos: 0, modes: [.default],
                    site: CalloutSite(kind: .timer, label: nil, file: #fileID, line: 1)
                ) { _ in order.append(name) }
            }
            let cancelled = loop.schedule(after: .milliseconds(15)) { _ in order.append("cancelled") }
            cancelled.cancel()
            loop.schedule(after: .milliseconds(40)) { _ in loop.stop() }
            loop.run()
            return order
        }
        #expect(order == ["10", "20a", "20b", "20c", "30"])
    }

    @Test func repeatingTimerStaysOnItsGridAndCountsSkippedFires() async {
        struct Fire: Sendable {
            var index: UInt64
            var firedAt: UInt64
        }
        let result = await onLoopThread {
            loop -> (fires: [Fire], origin: UInt64, skipped: UInt64, count: UInt64) in
            var fires: [Fire] = []
            let interval: UInt64 = 10_000_000
            let origin = MainLoop.monotonicNanos() + interval
            let timer = loop.schedule(
                at: origin, intervalNanos: interval, toleranceNanos: 0, modes: [.default],
                site: CalloutSite(kind: .timer, label: nil, file: #fileID, line: 1)
            ) { timer in
                // fireIndex has moved past this fire: the index of this one is the previous.
                fires.append(Fire(index: timer.fireIndex - 1, firedAt: MainLoop.monotonicNanos()))
                if fires.count == 5 { usleep(45_000) }  // busy for ~4.5 intervals
                if fires.count == 12 {
                    timer.cancel()
                    loop.stop()
                }
            }
            loop.run()
            return (fires, origin, timer.skippedFires, timer.fireCount)
        }
        let interval: UInt64 = 10_000_000
        #expect(result.count == 12)
        // The 45 ms fire passes at least 3 grid points (more on a loaded machine, whose sleep
        // wakes late: no upper bound). That each one passed is counted is the no-drift check below.
        #expect(result.skipped >= 3)
        for (previous, fire) in zip(result.fires, result.fires.dropFirst()) {
            #expect(fire.index > previous.index)
        }
        for fire in result.fires {
            // Never early, and on the grid: fire k is due at origin + k × interval.
            let due = result.origin + fire.index * interval
            #expect(fire.firedAt >= due)
        }
        // No drift: the 12th fire is due exactly where the grid says, skipped fires included.
        #expect(result.fires.last!.index == 11 + result.skipped)
    }

    @Test func delaysAndIntervalsPastTheClocksRangeMeanNever() async {
        // `.seconds(Int64.max)` is past the nanosecond clock: such a deadline is never due (a
        // deadline that wrapped would be in the past and fire at once), and a grid point past
        // it is never either (its multiplication saturates instead of trapping).
        let fired = await onLoopThread { loop -> (once: Int, repeating: UInt64) in
            let once = Box(0)
            loop.schedule(after: .seconds(Int64.max)) { _ in once.value += 1 }
            let repeating = loop.schedule(after: .zero, repeating: .seconds(Int64.max)) { _ in }
            for _ in 0..<5 { loop.runOnce(timeout: .milliseconds(10)) }
            repeating.cancel()
            return (once.value, repeating.fireCount)
        }
        #expect(fired.once == 0)
        #expect(fired.repeating == 1)
    }
}
