// A scenario run on a monitored loop (16 ms budget): what the monitor saw, what the scenario
// measured itself, and the named stalling work stacks show. For the monitor's and the remedies'
// tests.
import Foundation
import Stallwatch
import StallwatchCore

package struct MonitoredRun: Sendable {
    package var began: [Stall]
    package var ended: [Stall]
    package var statistics: StallMonitor.Statistics
    /// What the scenario measured itself: the stalling callout's duration (ns), per callout.
    package var measured: [UInt64]
    /// When each of those callouts' work ran (CLOCK_MONOTONIC).
    package var windows: [ClosedRange<UInt64>]
    /// Where the scenario posted its stalling work.
    package var postedAt: (file: String, line: UInt)?
}

/// Runs `scenario` on a fresh loop thread with a StallMonitor (16 ms budget) attached, runs
/// the loop until the scenario's work is done plus `settle`, and returns what the monitor saw.
package func monitored(
    budget: Duration = .nanoseconds(16_666_667),
    settle: Duration = .milliseconds(50),
    configure: @escaping @Sendable (inout StallMonitor.Configuration) -> Void = { _ in },
    _ scenario: @escaping @Sendable (MainLoop, Measurements) -> Void
) async throws -> MonitoredRun {
    let collected = Locked<(began: [Stall], ended: [Stall])>(([], []))
    let measurements = Measurements()
    let statistics = try await onLoopThreadThrowing { loop -> StallMonitor.Statistics in
        var configuration = StallMonitor.Configuration()
        configuration.budget = budget
        configure(&configuration)
        let monitor = StallMonitor(loop: loop, configuration: configuration)
        monitor.onStallBegan = { stall in collected.withLock { $0.began.append(stall) } }
        monitor.onStallEnded = { stall in collected.withLock { $0.ended.append(stall) } }
        try monitor.start()
        scenario(loop, measurements)
        // Not stop(): a scenario's nested run could take the stop meant for this one.
        let done = Box(false)
        loop.post(label: "finish") {
            loop.schedule(after: settle) { _ in done.value = true }
        }
        let giveUp = MainLoop.monotonicNanos() + 60_000_000_000
        while !done.value && MainLoop.monotonicNanos() < giveUp { loop.runOnce(timeout: .milliseconds(100)) }
        monitor.stop()
        return monitor.statistics
    }
    let (began, ended) = collected.withLock { ($0.began, $0.ended) }
    return MonitoredRun(
        began: began, ended: ended, statistics: statistics, measured: measurements.values,
        windows: measurements.windows, postedAt: measurements.postedAt)
}

/// Durations a scenario measured around its own stalling work.
package final class Measurements: @unchecked Sendable {
    private let lock = Locked<[ClosedRange<UInt64>]>([])
    /// How long each timed piece of work took, in the order they ran.
    package var values: [UInt64] { lock.withLock { $0.map { $0.upperBound - $0.lowerBound } } }
    /// When each ran (CLOCK_MONOTONIC): a stall of it must span its window.
    package var windows: [ClosedRange<UInt64>] { lock.withLock { $0 } }

    private let site = Locked<(file: String, line: UInt)?>(nil)
    /// Where the stalling work was posted from.
    package var postedAt: (file: String, line: UInt)? { site.withLock { $0 } }

    /// Posts `work` to `loop`, timed, remembering the posting site (which the stall must name).
    package func post(
        _ loop: MainLoop, file: StaticString = #fileID, line: UInt = #line, _ work: @escaping @Sendable () -> Void
    ) {
        site.withLock { $0 = ("\(file)", line) }
        loop.post(file: file, line: line) { self.time(work) }
    }

    /// Runs `work` and records how long it took.
    package func time(_ work: () -> Void) {
        let start = MainLoop.monotonicNanos()
        work()
        let end = MainLoop.monotonicNanos()
        lock.withLock { $0.append(start...end) }
    }
}

extension Stall {
    /// Every symbol in the first `depth` frames of every sample.
    package func topSymbols(depth: Int = 12) -> [String] {
        samples.flatMap { $0.frames.prefix(depth).compactMap(\.symbol) }
    }

    package var durationNanos: UInt64 { end.map { $0 - start } ?? 0 }

    /// Whether this stall spans `window` (work a test timed inside the callout), but for the
    /// TSC's conversion to CLOCK_MONOTONIC (0.1 ms of slack).
    package func spans(_ window: ClosedRange<UInt64>) -> Bool {
        start <= window.lowerBound + 100_000 && (end ?? 0) + 100_000 >= window.upperBound
    }
}

// The stalling work of the scenarios: named, never inlined, so stacks can show them.

@inline(never) package func spinForStallTest(milliseconds: UInt64) {
    let end = MainLoop.monotonicNanos() + milliseconds * 1_000_000
    var x: UInt64 = 1
    while MainLoop.monotonicNanos() < end {
        for i in 0..<1000 { x = x &* 6_364_136_223_846_793_005 &+ UInt64(i) }
    }
    blackHole(x)
}

@inline(never) package func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
