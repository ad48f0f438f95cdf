/// How a stall's time is shared out among its samples: the one rule that
/// `Classifier.breakdown(of:)` in the app, the report's totals and every export follow, so a
/// stall's figures are the same wherever they are read and their sums agree.
///
/// Each sample stands for the time until the next sample, the last one until the stall's
/// end (nothing for an unfinished stall, whose duration also stops at its last sample), and
/// the **first sample also for the time since the callout started**: the budget that elapsed
/// before the watchdog could look, spent (as far as anyone can tell) in what the first sample
/// shows. Only the stall's own time is shared out: a sample taken as the stall ended, stamped
/// after its end, stands for nothing past it. So the weights of a stall with samples add up to
/// its duration exactly; a stall without samples has all of its duration unsampled.
///
/// Pure; use it on any thread.
public enum StallAccounting {
    /// The nanoseconds each of `stall`'s samples (sorted by time) stands for.
    public static func sampleWeights(_ stall: Stall) -> [UInt64] {
        let samples = stall.samples
        return samples.indices.map { index in
            weight(
                at: samples[index].time, next: index + 1 < samples.count ? samples[index + 1].time : nil,
                isFirst: index == 0, start: stall.start, end: stall.end)
        }
    }

    /// The nanoseconds a sample taken at `time` stands for, in a stall from `start` to `end`
    /// (nil: unfinished): from `time` (from `start` for the first sample, `isFirst`) until
    /// `next`, the next sample's time, or for the last sample (`next` nil) until `end`; never
    /// outside the stall.
    @inline(__always)
    package static func weight(at time: UInt64, next: UInt64?, isFirst: Bool, start: UInt64, end: UInt64?)
        -> UInt64
    {
        let from = isFirst ? start : max(time, start)
        let until = min(next ?? end ?? time, end ?? .max)
        return until > from ? until - from : 0
    }

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
