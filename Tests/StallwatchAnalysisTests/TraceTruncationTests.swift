// A trace cut at any byte decodes every record before the cut and reports the truncation.

import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct TraceTruncationTests {
    @Test func cutAtEveryByteOffset() {
        let full = TraceFixture.encode(TraceFixture.realistic())
        let whole = decodeAll(full)
        #expect(whole.outcome.endedCleanly)
        #expect(full.count > 3_000)
        // Record i occupies offsets[i]..<ends[i].
        let ends = Array(whole.offsets.dropFirst()) + [full.count]
        let boundaries = Set([TraceFormat.preambleSize] + ends)

        for cut in 0...full.count {
            let part = decodeAll(Array(full[..<cut]), fileName: "cut.swtrace")
            let expected = zip(whole.records, ends).prefix { $0.1 <= cut }.map(\.0)
            #expect(part.records == expected, "cut at \(cut)")
            if boundaries.contains(cut) {
                #expect(part.outcome.endedCleanly, "cut at \(cut): \(part.outcome.problems)")
                continue
            }
            guard let truncation = part.outcome.truncation, part.outcome.problems.count == 1 else {
                Issue.record("cut at \(cut): expected one truncation, got \(part.outcome.problems)")
                continue
            }
            let incomplete = cut < TraceFormat.preambleSize ? 0 : whole.offsets[expected.count]
            #expect(truncation.offset == incomplete, "cut at \(cut)")
            #expect(truncation.skippedBytes == cut - incomplete)
            #expect(truncation.description.hasPrefix("cut.swtrace: byte \(incomplete): the input ends"))
        }
    }

    @Test func emptyInputIsATruncatedPreamble() {
        let outcome = TraceDecoder.decode(UnsafeRawBufferPointer(start: nil, count: 0)) { _, _ in }
        #expect(outcome.truncation?.offset == 0)
        var decoder = TraceDecoder([])
        #expect(decoder.next() == nil)
        #expect(decoder.outcome.truncation?.problem == .truncated(kind: nil))
    }
}
