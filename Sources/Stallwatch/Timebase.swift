import CStallwatchShims
import StallwatchCore
import Synchronization

/// Converts `sw_cycles()` stamps (what the loop publishes per callout, because reading the
/// TSC costs a third of `clock_gettime`) to CLOCK_MONOTONIC nanoseconds.
///
/// The rate is measured against CLOCK_MONOTONIC over an ever longer baseline (from the first
/// anchor to the latest), and conversions start from the latest anchor, so the error of a
/// stamp near "now" stays in the tens of nanoseconds. Any thread (a mutex; the watchdog and
/// monitors are its users, never the loop's hot path).
final class Timebase: Sendable {
    static let shared = Timebase()

    private struct Anchor {
        var cycles: UInt64
        var nanos: UInt64
    }

    private struct State {
        var first: Anchor
        var latest: Anchor
        var nanosPerCycle: Double
    }

    private let state: Locked<State>

    private init() {
        let first = Self.anchor()
        // A first rate from a short busy wait; every refresh lengthens the baseline.
        var second = Self.anchor()
        while second.nanos - first.nanos < 2_000_000 { second = Self.anchor() }
        let rate = Double(second.nanos - first.nanos) / Double(max(1, second.cycles &- first.cycles))
        state = Locked(State(first: first, latest: second, nanosPerCycle: rate))
    }

    /// Reads both clocks back to back (cycles taken as the midpoint of two reads). A thread
    /// preempted between the reads would pair the clocks milliseconds apart (and a rate measured
    /// from such an anchor over a short baseline is off by tens of per cent: on a loaded machine
    /// that made the loop's budget in cycles too long or too short, so callouts under the budget
    /// were logged as stalls and a few over it were not). So it reads a few times and keeps the
    /// pair taken closest together.
    private static func anchor() -> Anchor {
        var best = Anchor(cycles: 0, nanos: 0)
        var bestSpread = UInt64.max
        for _ in 0..<8 {
            let before = sw_cycles()
            let nanos = sw_monotonic_ns()
            let after = sw_cycles()
            let spread = after &- before
            if spread < bestSpread {
                (best, bestSpread) = (Anchor(cycles: before &+ spread / 2, nanos: nanos), spread)
            }
            // A few hundred cycles is two clock reads with nothing in between.
            if spread < 1_000 { break }
        }
        return best
    }

    /// Re-anchors and refines the rate (cheap: three clock reads).
    func refresh() {
        let now = Self.anchor()
        state.withLock { state in
            state.latest = now
            let span = now.cycles &- state.first.cycles
            if span > 0 && now.nanos > state.first.nanos {
                state.nanosPerCycle = Double(now.nanos - state.first.nanos) / Double(span)
            }
        }
    }

    /// The CLOCK_MONOTONIC time of a cycle stamp.
    func nanos(_ cycles: UInt64) -> UInt64 {
        state.withLock { state in
            let delta = Double(Int64(bitPattern: cycles &- state.latest.cycles)) * state.nanosPerCycle
            return UInt64(max(0, Double(state.latest.nanos) + delta))
        }
    }

    /// A lock-free converter for a batch of stamps near now (the writer thread's many callouts).
    struct Converter {
        var cycles: UInt64
        var nanos: UInt64
        var nanosPerCycle: Double

        func nanos(_ stamp: UInt64) -> UInt64 {
            UInt64(max(0, Double(nanos) + Double(Int64(bitPattern: stamp &- cycles)) * nanosPerCycle))
        }

        func duration(from start: UInt64, to end: UInt64) -> UInt64 {
            end > start ? UInt64(Double(end - start) * nanosPerCycle) : 0
        }
    }

    /// Re-anchors and returns a converter for stamps near now.
    func converter() -> Converter {
        refresh()
        return state.withLock {
            Converter(cycles: $0.latest.cycles, nanos: $0.latest.nanos, nanosPerCycle: $0.nanosPerCycle)
        }
    }

    /// Nanoseconds between two cycle stamps.
    func duration(from start: UInt64, to end: UInt64) -> UInt64 {
        guard end > start else { return 0 }
        return state.withLock { UInt64(saturating: Double(end - start) * $0.nanosPerCycle) }
    }

    /// Cycles in `nanos` nanoseconds (`UInt64.max` for a count past it: a budget of centuries).
    func cycles(_ nanos: UInt64) -> UInt64 {
        state.withLock { UInt64(saturating: Double(nanos) / $0.nanosPerCycle) }
    }
}

extension UInt64 {
    /// `value` rounded down, `UInt64.max` past it, 0 below 0 or for NaN.
    fileprivate init(saturating value: Double) {
        if value >= 18_446_744_073_709_551_616 {  // 2^64
            self = .max
        } else {
            self = value > 0 ? UInt64(value) : 0
        }
    }
}
