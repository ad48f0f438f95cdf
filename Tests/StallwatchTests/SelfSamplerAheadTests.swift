// The thread's own capture ahead of a callout's deadline: a callout past half its budget leaves
// its latest stack, so a stall whose thread gets no CPU at the deadline has one at once.
import CStallwatchSampler
import CStallwatchShims
import Foundation
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct SelfSamplerAheadTests {
    /// Runs `body` on a new thread whose ticks read a callout clock the test moves, with a
    /// self-sampler open on it (16.7 ms budget, default tick); its result, or why there is none.
    func onSampledThread<T: Sendable>(
        _ body: @escaping @Sendable (SelfSampler, UnsafeMutablePointer<sw_callout_clock>) -> T
    ) throws -> Result<T, SelfSamplingRefused> {
        try Sampler.install(signal: Sampler.defaultSignal)
        if let refused = SelfSampler.installSignal() { return .failure(SelfSamplingRefused(status: "\(refused)")) }
        let clock = UnsafeMutablePointer<sw_callout_clock>.allocate(capacity: 1)
        clock.initialize(
            to: sw_callout_clock(sequence: 0, start_cycles: 0, descriptor: 0, label: 0, file: 0, stalled_sequence: 0))
        defer { clock.deallocate() }
        let clockAddress = Int(bitPattern: clock)
        let result = Locked<Result<T, SelfSamplingRefused>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            let clock = UnsafeMutablePointer<sw_callout_clock>(bitPattern: clockAddress)!
            Sampler.prepareCurrentThread()
            let (own, status) = SelfSampler.open(tid: sw_gettid(), clock: clock, configuration: MonitorConfiguration())
            guard let own, own.enable() else {
                result.withLock { $0 = .failure(SelfSamplingRefused(status: "\(status)")) }
                return
            }
            let value = body(own, clock)
            result.withLock { $0 = .success(value) }
        }
        thread.start()
        done.wait()
        return try #require(result.withLock { $0 })
    }

    struct SelfSamplingRefused: Error { var status: String }

    /// Spins on the thread's CPU, keeping its callout `offset` budgets into its run (the clock's
    /// start moves with the wall clock, so the position holds however loaded the machine), until
    /// `done` or 2 s of CPU.
    @inline(never)
    static func spinAt(_ clock: UnsafeMutablePointer<sw_callout_clock>, offset: Double, until done: () -> Bool) {
        let cpu = ThreadCPUClock(tid: sw_gettid())
        let limit = (cpu.read() ?? 0) + 2_000_000_000
        let budget = Double(Timebase.shared.cycles(MonitorConfiguration().tiers.budget.nanoseconds))
        var x: UInt64 = 1
        while !done(), (cpu.read() ?? .max) < limit {
            sw_clock_set_start_cycles_relaxed(clock, sw_cycles() &- UInt64(budget * offset))
            for _ in 0..<10_000 { x = x &* 6_364_136_223_846_793_005 &+ 1 }
        }
        blackHole(x)
    }

    @Test(.disabled(if: Sanitizer.thread, "TSan defers signal handlers away from where they land"))
    func aCalloutPastHalfItsBudgetHoldsOneStackAheadOfItsDeadline() throws {
        let run = try onSampledThread { own, clock in
            sw_clock_set_start_cycles_relaxed(clock, sw_cycles())
            sw_clock_set_sequence(clock, 1)
            // Three quarters into its budget for ten captures' worth of ticks: each rewrites the
            // one capture ahead of the deadline.
            Self.spinAt(clock, offset: 0.75) { own.counters.captures >= 10 }
            let captures = own.counters.captures
            let first = own.take(sequence: 1, earliest: true, after: 0)
            let second = own.take(sequence: 1, earliest: true, after: 0)
            // A quarter into its budget: no stack.
            sw_clock_set_sequence(clock, 3)
            let ticks = own.counters.ticks
            Self.spinAt(clock, offset: 0.25) { own.counters.ticks >= ticks + 5 }
            let early = own.take(sequence: 3, earliest: true, after: 0)
            return (captures, first?.addresses.count ?? 0, second != nil, early != nil, own.counters.ticks - ticks)
        }
        let (captures, frames, second, early, ticks) = try run.get()
        #expect(captures >= 10, "the callout's ticks took \(captures) stacks")
        #expect(frames > 0, "no stack ahead of the deadline")
        #expect(!second, "more than one stack ahead of the deadline: they are rewritten in one slot")
        #expect(ticks >= 5 && !early, "a stack of a callout a quarter into its budget")
    }

    @Test(.disabled(if: Sanitizer.thread, "TSan defers signal handlers away from where they land"))
    func theStallsFirstStackIsTheOneAheadAndItsMissedSamplesAreThosePastTheDeadline() throws {
        struct Stall: Sendable {
            var first: UInt64?
            var pastDeadline: [UInt64]
            var deadline: UInt64
        }
        let run = try onSampledThread { own, clock in
            var stalls: [Stall] = []
            for sequence: UInt64 in [5, 7] {
                sw_clock_set_start_cycles_relaxed(clock, sw_cycles())
                sw_clock_set_sequence(clock, sequence)
                let captured = own.counters.captures
                Self.spinAt(clock, offset: 0.75) { own.counters.captures >= captured + 3 }
                let deadline = sw_monotonic_ns()
                // Past the deadline: the stall's captures, one per sampling interval.
                let ahead = own.counters.captures
                Self.spinAt(clock, offset: 2) { own.counters.captures >= ahead + 2 }
                // A stall the watchdog times takes the earliest first; one it missed, those past.
                let first = sequence == 5 ? own.take(sequence: sequence, earliest: true, after: 0)?.time : nil
                let past = own.takeAll(sequence: sequence, after: deadline).map(\.time)
                stalls.append(Stall(first: first, pastDeadline: past, deadline: deadline))
            }
            return stalls
        }
        let stalls = try run.get()
        try #require(stalls.count == 2)
        let (timed, missed) = (stalls[0], stalls[1])
        // Timed: the first stack is the one from before the deadline, the rest after it.
        #expect(timed.first.map { $0 < timed.deadline } == true, "\(timed)")
        #expect(!timed.pastDeadline.isEmpty && timed.pastDeadline.allSatisfy { $0 > timed.deadline }, "\(timed)")
        // Missed: only the captures past its deadline.
        #expect(!missed.pastDeadline.isEmpty && missed.pastDeadline.allSatisfy { $0 > missed.deadline }, "\(missed)")
    }
}
