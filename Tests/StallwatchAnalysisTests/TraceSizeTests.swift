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

    /// 17 keys of 65,535-byte values made a 1,114,241-byte record that every reader refused
    /// (`show`, `gate`, `export` exited 2): the encoder keeps what fits in 512 KiB and says how
    /// many keys it left out.
    @Test func noAppStateMakesAnUnreadableRecord() {
        let value = String(repeating: "v", count: 65_535)
        let state = (0..<17).map { TraceRecord.StallContext.KeyValue(key: "key\($0 + 10)", value: value) }
        let bytes = TraceFixture.encode([.stallContext(.init(id: 3, expected: "load", state: state))])
        let decoded = decodeAll(bytes)
        #expect(decoded.outcome.problems.isEmpty, "\(decoded.outcome.problems)")
        guard case .stallContext(let context) = withoutSync(decoded.records).first else {
            Issue.record("no context record: \(decoded.records.map(\.kind))")
            return
        }
        // Seven pairs of 65,546 bytes fit in 512 KiB; the eighth stands for the ten left out.
        // (Compared by key and size: a failure must not print megabytes.)
        #expect(context.state.count == 7 + 1)
        #expect(context.state.dropLast().map(\.key) == state.prefix(7).map(\.key))
        #expect(context.state.dropLast().allSatisfy { $0.value == value })
        #expect(context.state.last?.key == TraceRecord.StallContext.cutKey)
        #expect(context.state.last?.value.hasPrefix("10 more keys left out") == true)
        #expect(context.expected == "load")
        // What fits stays whole.
        let small = Array(state.prefix(2))
        let whole = withoutSync(
            decodeAll(TraceFixture.encode([.stallContext(.init(id: 4, expected: nil, state: small))])).records)
        #expect(whole == [.stallContext(.init(id: 4, expected: nil, state: small))])
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
