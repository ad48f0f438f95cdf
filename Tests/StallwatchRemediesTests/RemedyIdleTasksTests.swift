// Idle tasks run only when the loop is about to wait, in order, each given the time until the
// next timer (or frame tick, or 50 ms); a task whose timeout passes on a busy loop runs anyway.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch
@testable import StallwatchRemedies

@Suite struct RemedyIdleTasksTests {
    /// Keeps `loop` busy with a chain of posts for `milliseconds`: no iteration goes idle.
    static func keepBusy(_ loop: MainLoop, milliseconds: UInt64, done: @escaping @Sendable () -> Void) {
        let end = MainLoop.monotonicNanos() + milliseconds * 1_000_000
        @Sendable func link() {
            spin(milliseconds: 1)
            if MainLoop.monotonicNanos() < end { loop.post(link) } else { done() }
        }
        loop.post(link)
    }

    @Test func tasksWaitForTheLoopToGoIdleAndRunInOrder() async {
        let outcome = await onLoopThread { loop -> (order: [Int], afterBusy: Bool) in
            let idle = IdleScheduler(loop: loop)
            let order = Box<[Int]>([])
            let busyEnded = Box<UInt64>(0)
            let firstRan = Box<UInt64>(0)
            Self.keepBusy(loop, milliseconds: 80) { busyEnded.value = MainLoop.monotonicNanos() }
            for index in 0..<3 {
                idle.schedule { _ in
                    if index == 0 { firstRan.value = MainLoop.monotonicNanos() }
                    order.value.append(index)
                    if index == 2 { loop.stop() }
                }
            }
            loop.run(mode: .default, until: .now + .seconds(10))
            return (order.value, busyEnded.value != 0 && firstRan.value > busyEnded.value)
        }
        #expect(outcome.order == [0, 1, 2])
        #expect(outcome.afterBusy, "an idle task ran while the loop had work")
    }

    /// A task that queues itself again ran over and over until the deadline: every idle period
    /// was a 50 ms iteration, over the budget. Now a period runs only what was queued before it.
    @Test func aTaskQueuedDuringAnIdlePeriodWaitsForTheNext() async {
        let (runs, periods) = await onLoopThread { loop -> (Int, Int) in
            let idle = IdleScheduler(loop: loop)
            let runs = Box(0)
            func again() {
                idle.schedule { _ in
                    runs.value += 1
                    if runs.value == 20 { loop.stop() } else { again() }
                }
            }
            again()
            loop.run(mode: .default, until: .now + .seconds(10))
            return (runs.value, idle.idlePeriods)
        }
        #expect(runs == 20)
        #expect(periods == 20, "each run had an idle period of its own")
    }

    @Test func theDeadlineIsTheNextTimer() async {
        let outcome = await onLoopThread { loop -> (deadline: UInt64, timer: UInt64) in
            let idle = IdleScheduler(loop: loop, maximumIdlePeriod: .seconds(5))
            // Far enough that a slow start (TSan, a loaded machine) cannot make the timer due
            // before the loop's first wait; the idle task stops the loop.
            let timer = loop.schedule(after: .seconds(2)) { _ in loop.stop() }
            let timerDeadline = timer.deadline
            let seen = Box<UInt64>(0)
            idle.schedule { deadline in
                seen.value = deadline.deadlineNanos
                loop.stop()
            }
            loop.run(mode: .default, until: .now + .seconds(10))
            timer.cancel()
            return (seen.value, timerDeadline)
        }
        #expect(outcome.deadline == outcome.timer)
    }

    @Test func theDeadlineIsTheNextFrameTickWhenAFrameClockRuns() async {
        let outcome = await onLoopThread { loop -> (deadline: UInt64, tick: UInt64?, didTimeout: Bool) in
            let idle = IdleScheduler(loop: loop)
            let frames = FrameClock(loop: loop) { _ in }
            frames.start()
            let seen = Box<(UInt64, UInt64?, Bool)>((0, nil, true))
            idle.schedule { deadline in
                seen.value = (deadline.deadlineNanos, frames.nextTickNanos, deadline.didTimeout)
                loop.stop()
            }
            loop.run(mode: .default, until: .now + .seconds(10))
            frames.stop()
            return seen.value
        }
        #expect(outcome.deadline == outcome.tick)
        #expect(!outcome.didTimeout)
    }

    @Test func withNoTimerTheIdlePeriodIsCapped() async {
        let outcome = await onLoopThread { loop -> (remaining: Duration, periodEnd: UInt64, scheduledAt: UInt64) in
            let idle = IdleScheduler(loop: loop, maximumIdlePeriod: .milliseconds(50))
            let seen = Box<(Duration, UInt64)>((.zero, 0))
            let scheduledAt = MainLoop.monotonicNanos()
            idle.schedule { deadline in
                seen.value = (deadline.timeRemaining, deadline.deadlineNanos)
                loop.stop()
            }
            loop.run(mode: .default, until: .now + .seconds(10))
            return (seen.value.0, seen.value.1, scheduledAt)
        }
        #expect(outcome.remaining <= .milliseconds(50))
        // The period began when the loop went idle, after the task was scheduled.
        #expect(outcome.periodEnd - outcome.scheduledAt >= 50_000_000)
        #expect(outcome.periodEnd - outcome.scheduledAt < 1_000_000_000)
    }

    @Test func aTaskThatUsesUpThePeriodLeavesTheRestForTheNextOne() async {
        let outcome = await onLoopThread { loop -> (order: [Int], periods: Int) in
            let idle = IdleScheduler(loop: loop, maximumIdlePeriod: .milliseconds(20))
            let order = Box<[Int]>([])
            idle.schedule { _ in
                order.value.append(0)
                usleep(30_000)  // past the 20 ms period
            }
            idle.schedule { _ in order.value.append(1) }
            idle.schedule { _ in
                order.value.append(2)
                loop.stop()
            }
            // No timers at all: only the scheduler's own wake-up brings the second period.
            loop.run(mode: .default, until: .now + .seconds(10))
            return (order.value, idle.idlePeriods)
        }
        #expect(outcome.order == [0, 1, 2])
        #expect(outcome.periods == 2)
    }

    @Test func aStarvedTaskRunsAtItsTimeout() async {
        // The loop is kept busy with 1 ms posts until the task has run (at most 10 s): never
        // idle, so the task can only run at its timeout. (Busy for a fixed 300 ms failed on a
        // loaded machine: slowed posts all fitted one loop iteration, which ended in `stop()`
        // before the timer's turn came.)
        let outcome = await onLoopThread { loop -> (didTimeout: Bool, ranWhileBusy: Bool) in
            let idle = IdleScheduler(loop: loop)
            let seen = Box<(didTimeout: Bool, ran: Bool)>((false, false))
            let giveUp = MainLoop.monotonicNanos() + 10_000_000_000
            @Sendable func link() {
                spin(milliseconds: 1)
                if !seen.value.ran && MainLoop.monotonicNanos() < giveUp { loop.post(link) } else { loop.stop() }
            }
            loop.post(link)
            idle.schedule(timeout: .milliseconds(50)) { deadline in
                seen.value = (deadline.didTimeout, true)
                #expect(deadline.timeRemaining == .zero)
            }
            loop.run(mode: .default, until: .now + .seconds(20))
            return (seen.value.didTimeout, seen.value.ran && MainLoop.monotonicNanos() < giveUp)
        }
        #expect(outcome.didTimeout)
        #expect(outcome.ranWhileBusy)
    }

    @Test func aCancelledTaskNeverRuns() async {
        let ran = await onLoopThread { loop -> [Int] in
            let idle = IdleScheduler(loop: loop)
            let ran = Box<[Int]>([])
            let first = idle.schedule(timeout: .milliseconds(5)) { _ in ran.value.append(0) }
            idle.schedule { _ in ran.value.append(1) }
            first.cancel()
            #expect(first.isCancelled && !first.hasRun)
            loop.run(mode: .default, until: .now + .milliseconds(100))
            return ran.value
        }
        #expect(ran == [1])
    }

    @Test func aSlowIdleTaskIsReportedWhereItWasScheduled() async throws {
        let line = Box<UInt>(0)
        let run = try await monitored { loop, _ in
            let idle = IdleScheduler(loop: loop)
            line.value = #line + 1
            idle.schedule(label: "warm cache") { _ in usleep(60_000) }
            loop.schedule(after: .seconds(1)) { _ in _ = idle }  // keeps it alive through the run
        }
        let stall = try #require(run.ended.first)
        #expect(stall.callout.label == "warm cache")
        #expect(stall.callout.line == UInt32(line.value))
        #expect(stall.callout.file == "StallwatchRemediesTests/RemedyIdleTasksTests.swift")
    }

    @Test func periodsAndTimeoutsPastTheClocksRangeMeanNeverNotNow() async {
        // now + a duration past UInt64 nanoseconds must not wrap into the past: a wrapped cap
        // would end every idle period before it began, a wrapped timeout fire at once.
        let outcome = await onLoopThread { loop -> (runs: [Bool], remaining: Duration) in
            let idle = IdleScheduler(loop: loop, maximumIdlePeriod: .seconds(Int64.max))
            let runs = Box<[Bool]>([])  // each run's didTimeout
            let remaining = Box<Duration>(.zero)
            Self.keepBusy(loop, milliseconds: 60) {}
            idle.schedule(timeout: .seconds(Int64.max)) { deadline in
                runs.value.append(deadline.didTimeout)
                remaining.value = deadline.timeRemaining
                loop.stop()
            }
            loop.run(mode: .default, until: .now + .seconds(5))
            return (runs.value, remaining.value)
        }
        #expect(outcome.runs == [false], "the task must run once, in an idle period, not at its timeout")
        #expect(outcome.remaining > .seconds(3600))
    }

    @Test func badPeriodsAndTimeoutsAreErrors() async {
        let child = ExitTestErrors()
        let zeroPeriod = await #expect(processExitsWith: .failure) { [path = child.path as String] in
            sendStandardError(to: path)
            _ = IdleScheduler(loop: MainLoop(), maximumIdlePeriod: .zero)
        }
        child.check(zeroPeriod)
        let negativeTimeout = await #expect(processExitsWith: .failure) { [path = child.path as String] in
            sendStandardError(to: path)
            IdleScheduler(loop: MainLoop()).schedule(timeout: .milliseconds(-1)) { _ in }
        }
        child.check(negativeTimeout)
    }
}
