// A callout record averages at most 12 bytes on disk, sync markers included; latency buckets
// are log-linear with a 1 µs floor.

import Testing

@testable import StallwatchCore

@Suite struct TraceSizeTests {
    @Test func calloutsAverageAtMostTwelveBytes() {
        // A busy loop: short callouts microseconds apart, sometimes after a 16 ms idle wait, from
        // a few hundred call sites and two modes.
        var random = SplitMix64(seed: 7)
        var records: [TraceRecord] = []
        var time: UInt64 = 81_300_000_000_000
        for index in 0..<20_000 {
            time += index % 40 == 0 ? 16_000_000 : random.next(below: 30_000)
            let duration = 500 + random.next(below: 200_000)
            records.append(
                .callout(
                    .init(
                        site: 1 + random.next(below: 300), mode: UInt16(random.next(below: 10) / 9),
                        start: time, duration: duration)))
            time += duration
        }
        let bytes = TraceFixture.encode(records)
        let perCallout = Double(bytes.count - TraceFormat.preambleSize) / Double(records.count)
        #expect(perCallout <= 12, "\(perCallout) bytes per callout")
        #expect(withoutSync(decodeAll(bytes).records) == records)
    }

    @Test func bucketsAreLogLinear() {
        #expect(LatencyBuckets.index(forNanoseconds: 0) == 0)
        #expect(LatencyBuckets.index(forNanoseconds: 999) == 0)
        #expect(LatencyBuckets.index(forNanoseconds: 1_000) == 1)
        #expect(LatencyBuckets.index(forNanoseconds: 15_999) == 15)
        #expect(LatencyBuckets.index(forNanoseconds: 16_000) == 16)
        #expect(LatencyBuckets.index(forNanoseconds: 33_999) == 32)
        #expect(LatencyBuckets.index(forNanoseconds: 34_000) == 33)
        #expect(LatencyBuckets.count == 817)
        var previous: UInt64 = 0
        for index in 1..<LatencyBuckets.count {
            let low = LatencyBuckets.lowerBoundNanoseconds(ofBucket: index)
            #expect(low > previous)
            #expect(LatencyBuckets.index(forNanoseconds: low) == index)
            #expect(LatencyBuckets.index(forNanoseconds: low - 1) == index - 1)
            // No bucket is wider than 1/16 of its lower bound (past the linear first 16).
            if index > 16 { #expect((low - previous) * 16 <= previous) }
            previous = low
        }
        #expect(
            LatencyBuckets.sparse([0, 3, 0, 0, 1]) == [
                .init(index: 1, count: 3), .init(index: 4, count: 1),
            ])
    }
}
