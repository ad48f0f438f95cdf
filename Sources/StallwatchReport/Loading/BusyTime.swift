import StallwatchCore

/// How busy the loop of a `full`-mode trace was, interval by interval: the strip the HTML
/// report draws under a lane. Added up callout by callout as the loader reads them, so a trace
/// of tens of millions of callouts takes a few thousand numbers, not a record per callout.
///
/// A plain value; use it on any thread.
package struct BusyTime: Sendable {
    /// How many intervals the strip has at most (the finest is 10 ms).
    package static let maximumBins = 4_000

    /// The length of one interval, in milliseconds.
    package private(set) var binMs: Double
    /// The milliseconds of callout time in each interval.
    package private(set) var bins: [Double]
    /// Where times are measured from (`CLOCK_MONOTONIC` nanoseconds).
    private let base: UInt64
    /// The bin the last callout started in, and the times safely inside it: a start there is
    /// in that bin without a division (callouts come in time order, most in the bin before's).
    private var last: (bin: Int, low: Double, high: Double) = (0, 1, 0)

    /// An empty strip of a run of `extentMs` milliseconds from `base`.
    init(extentMs: Double, base: UInt64) {
        binMs = max(10, extentMs / Double(Self.maximumBins))
        bins = [Double](repeating: 0, count: max(1, Int((extentMs / binMs).rounded(.up))))
        self.base = base
    }

    /// The strip of `loaded`'s run (as `report` measures it, from the header's clock base or
    /// its first stall), empty.
    init(of loaded: LoadedTrace) {
        let run = ReportBuilder.runTime(of: loaded)
        let base = loaded.trace.header?.clockBase ?? loaded.trace.bareStalls.map(\.start).min() ?? 0
        self.init(extentMs: round(Double(run) / 1e9, 6) * 1_000, base: base)
    }

    /// Adds a callout that started at `start` and ran `duration` nanoseconds.
    mutating func add(start: UInt64, duration: UInt64) {
        // Milliseconds by multiplication: a division per callout was most of the strip's cost.
        var from = start > base ? Double(start - base) * 1e-6 : 0
        let end = from + Double(duration) * 1e-6
        // Bin by bin by number: `from / binMs` at a bin's end can round back into that bin.
        var bin: Int
        if from > last.low && from < last.high {
            bin = last.bin
        } else {
            bin = Int(from / binMs)
            // A billionth of a bin from its ends: well past any rounding of `from / binMs`.
            let margin = binMs * 1e-9
            last = (bin, Double(bin) * binMs + margin, Double(bin + 1) * binMs - margin)
        }
        while from < end, bin < bins.count {
            let binEnd = Double(bin + 1) * binMs
            bins[bin] += max(0, min(end, binEnd) - from)
            from = binEnd
            bin += 1
        }
    }

    /// Adds what `other`, a strip of the same run, holds.
    mutating func add(_ other: BusyTime) {
        for index in bins.indices { bins[index] += other.bins[index] }
    }

    /// Each interval's busy share in permille.
    package var permille: [Int] { bins.map { min(1_000, Int(($0 / binMs * 1_000).rounded())) } }
}
