// The page's busy strip adds each callout's time to every interval it spans, and is done with
// each callout whatever the interval length (a bin's end divided by the length can round back
// into that bin).
import Testing

@testable import StallwatchReport

@Suite struct BusyTimeTests {
    @Test(.timeLimit(.minutes(1))) func aCalloutAcrossABinWhoseEndRoundsBackIsAddedOnce() {
        // 40,000.001 ms (the nearest double to this) in 4,000 bins: 10.00000025 ms each, and
        // 27 × that / that < 27.
        var busy = BusyTime(extentMs: 40_000.001_000_000_004, base: 0)
        #expect(Int(27 * busy.binMs / busy.binMs) == 26)
        busy.add(start: 265_000_000, duration: 10_000_000)
        #expect(abs(busy.bins[26] + busy.bins[27] - 10) < 1e-9)
        #expect(busy.bins.enumerated().allSatisfy { $0.offset == 26 || $0.offset == 27 || $0.element == 0 })
        #expect(busy.permille[26] == 500 && busy.permille[27] == 500)
    }
}
