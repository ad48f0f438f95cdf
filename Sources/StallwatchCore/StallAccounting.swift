/// How a stall's time is shared out among its samples: the one rule that
/// `Classifier.breakdown(of:)` in the app, the report's totals and every export follow, so a
/// stall's figures are the same wherever they are read and their sums agree.
///
/// Each sample stands for the time until the next sample, the last one until the stall's
/// end (nothing for an unfinished stall, whose duration also stops at its last sample), and
/// the **first sample also for the time since the callout started**: the budget that elapsed
/// before the watchdog could look, spent (as far as anyone can tell) in what the first sample
/// shows. So the weights of a stall with samples add up to its duration exactly; a stall
/// without samples has all of its duration unsampled.
///
/// Pure; use it on any thread.
public enum StallAccounting {
    /// The nanoseconds each of `stall`'s samples (sorted by time) stands for.
    public static func sampleWeights(_ stall: Stall) -> [UInt64] {
        var weights = StallBreakdown.sampleWeights(stall.samples, end: stall.end)
        if let first = stall.samples.first { weights[0] += leadIn(first: first.time, start: stall.start) }
        return weights
    }

    /// What the first sample, taken at `first`, stands for beyond its own weight: the time
    /// since the callout started at `start`.
    package static func leadIn(first: UInt64, start: UInt64) -> UInt64 { first > start ? first - start : 0 }

    /// How long `stall` lasted: until its end, or for an unfinished stall until its last
    /// sample.
    public static func duration(_ stall: Stall) -> UInt64 {
        duration(start: stall.start, end: stall.end, lastSample: stall.samples.last?.time)
    }

    /// How long a stall from `start` lasted: until `end`, or (unfinished) until its last
    /// sample, taken at `lastSample`.
    package static func duration(start: UInt64, end: UInt64?, lastSample: UInt64?) -> UInt64 {
        let reached = end ?? lastSample ?? start
        return reached > start ? reached - start : 0
    }
}
