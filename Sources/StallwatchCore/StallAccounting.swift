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
/// Samples in a row with the **same look number** (`Sample.look`) are one look at several
/// threads: a pool starvation samples every pool thread at each look. They stand for the time
/// from the look's first sample until the next look, shared equally, so no thread's share
/// depends on the order they were sampled in (the first ones by a nanosecond more when it does
/// not divide, so the sum stays exact). A sample without a look number is a look of its own.
///
/// Time the process was **stopped** (SIGSTOP, a debugger: `Stall.stopped`) is not the app's:
/// it is left out of the duration and of the weight of the sample whose time it fell in.
///
/// Pure; use it on any thread.
public enum StallAccounting {
    /// The nanoseconds each of `stall`'s samples (sorted by time) stands for.
    public static func sampleWeights(_ stall: Stall) -> [UInt64] {
        let samples = stall.samples
        var walk = Walk(start: stall.start, end: stall.end, stopped: stall.stopped)
        return samples.indices.map { index in
            walk.weight(of: index, count: samples.count, time: { samples[$0].time }, look: { samples[$0].look })
        }
    }

    /// The index past the look that begins at sample `index` of `count`, whose look numbers
    /// `look(i)` gives (in time order): the samples after it with its look number. The one
    /// definition of a look, for the weights here and for the report's thread counts.
    @inlinable
    package static func lookEnd(from index: Int, count: Int, look: (Int) -> UInt32?) -> Int {
        var next = index + 1
        guard let number = look(index) else { return next }
        while next < count && look(next) == number { next += 1 }
        return next
    }

    /// Gives a stall's samples their weights one by one, in time order: what `sampleWeights`
    /// does, for a caller that walks its samples in another form (the report's sample table).
    @usableFromInline
    package struct Walk {
        @usableFromInline let start: UInt64
        @usableFromInline let end: UInt64?
        @usableFromInline let stopped: [Range<UInt64>]
        /// The current look (`lookEnd`): its first index, the index past it, each one's share,
        /// and how many of its first samples get a nanosecond more.
        @usableFromInline var groupStart = 0
        @usableFromInline var groupEnd = 0
        @usableFromInline var share: UInt64 = 0
        @usableFromInline var extra = 0

        /// A walk over the samples of a stall from `start` to `end` (nil: unfinished), in which
        /// the process was stopped over `stopped`.
        @inlinable
        package init(start: UInt64, end: UInt64?, stopped: [Range<UInt64>] = []) {
            self.start = start
            self.end = end
            self.stopped = stopped
        }

        /// The weight of sample `index` of `count` (asked in order, from 0), whose times
        /// `time(i)` and look numbers `look(i)` give.
        @inlinable
        package mutating func weight(
            of index: Int, count: Int, time: (Int) -> UInt64, look: (Int) -> UInt32?
        ) -> UInt64 {
            if index >= groupEnd {
                let next = StallAccounting.lookEnd(from: index, count: count, look: look)
                let span = StallAccounting.weight(
                    at: time(index), next: next < count ? time(next) : nil, isFirst: index == 0, start: start, end: end,
                    stopped: stopped)
                groupStart = index
                groupEnd = next
                // A look of one sample (every stall of one thread) needs no division.
                if next == index + 1 {
                    share = span
                    extra = 0
                } else {
                    let size = UInt64(next - index)
                    share = span / size
                    extra = Int(span % size)
                }
            }
            return share + (index - groupStart < extra ? 1 : 0)
        }
    }

    /// The nanoseconds a sample taken at `time` stands for, in a stall from `start` to `end`
    /// (nil: unfinished): from `time` (from `start` for the first sample, `isFirst`) until
    /// `next`, the next sample's time, or for the last sample (`next` nil) until `end`; never
    /// outside the stall.
    /// Time the process was stopped (`stopped`) within it is left out.
    @inlinable
    package static func weight(
        at time: UInt64, next: UInt64?, isFirst: Bool, start: UInt64, end: UInt64?, stopped: [Range<UInt64>] = []
    ) -> UInt64 {
        let from = isFirst ? start : max(time, start)
        let until = min(next ?? end ?? time, end ?? .max)
        guard until > from else { return 0 }
        return until - from - stoppedNanos(in: from..<until, of: stopped)
    }

    /// How much of `range` the intervals `stopped` (disjoint) cover.
    @inlinable
    package static func stoppedNanos(in range: Range<UInt64>, of stopped: [Range<UInt64>]) -> UInt64 {
        var total: UInt64 = 0
        for interval in stopped {
            let low = max(interval.lowerBound, range.lowerBound)
            let high = min(interval.upperBound, range.upperBound)
            if high > low { total += high - low }
        }
        return total
    }

    /// How long `stall` lasted: until its end, or for an unfinished stall until its last
    /// sample, less the time the process was stopped in it.
    public static func duration(_ stall: Stall) -> UInt64 {
        duration(start: stall.start, end: stall.end, lastSample: stall.samples.last?.time, stopped: stall.stopped)
    }

    /// How long a stall from `start` lasted: until `end`, or (unfinished) until its last
    /// sample, taken at `lastSample`, less the time the process was stopped (`stopped`) in it.
    package static func duration(
        start: UInt64, end: UInt64?, lastSample: UInt64?, stopped: [Range<UInt64>] = []
    ) -> UInt64 {
        let reached = end ?? lastSample ?? start
        guard reached > start else { return 0 }
        return reached - start - stoppedNanos(in: start..<reached, of: stopped)
    }
}
