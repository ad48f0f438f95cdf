// No damage to a trace (flipped bits, changed, inserted or deleted bytes) makes the decoder
// trap or hang: it always yields records and an outcome whose problems are well formed.

import StallwatchTestSupport
import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct TraceMutationTests {
    /// Small traces (so 100,000 decodes stay quick in debug builds) with every kind, and sync
    /// markers close together so damage is often followed by a resynchronisation.
    static let originals: [[UInt8]] = [
        TraceFixture.encode(TraceFixture.everyKind.filter { !isLongSymbol($0) }, syncInterval: 96),
        TraceFixture.encode(
            TraceFixture.realistic(callouts: 12, seed: 5).filter { !isLongSymbol($0) }, syncInterval: 128),
    ]

    static func isLongSymbol(_ record: TraceRecord) -> Bool {
        if case .symbol(let symbol) = record { return symbol.name?.utf8.count ?? 0 > 127 }
        return false
    }

    @Test func originalsAreSmallAndWhole() {
        for original in Self.originals {
            // Small enough for 100,000 decodes in a debug build (every kind, 26 of them now).
            #expect(original.count < 1_100)
            #expect(decodeAll(original).outcome.endedCleanly)
        }
    }

    static let seeds: [UInt64] = [11, 22, 33, 44]
    static let mutationsPerSeed = 25_000

    @Test(arguments: seeds)
    func randomMutationsNeverCrashTheDecoder(seed: UInt64) {
        var random = TraceMutator(seed: seed)
        var undetected = 0
        for round in 0..<Self.mutationsPerSeed {
            var bytes = Self.originals[round % Self.originals.count]
            random.mutate(&bytes, count: 1 + Int(random.next(below: 4)))

            var count = 0
            var lastOffset = -1
            var ordered = true
            let outcome = bytes.withUnsafeBytes { buffer in
                TraceDecoder.decode(buffer, fileName: "fuzz.swtrace") { _, offset in
                    count += 1
                    ordered = ordered && offset > lastOffset
                    lastOffset = offset
                }
            }
            if outcome.endedCleanly { undetected += 1 }
            // Plain checks, not #expect, per round: the macro's bookkeeping would dominate.
            let checkText = round % 16 == 0
            guard ordered, outcome.recordCount == count,
                wellFormed(outcome.problems, count: bytes.count, checkText: checkText)
            else {
                Issue.record("seed \(seed), round \(round): \(count) records, \(outcome.problems)")
                return
            }
            if round % 16 == 0 {
                // The assembly the CLI uses must survive whatever decoded.
                let trace = DecodedTrace(decoding: bytes, fileName: "fuzz.swtrace")
                if trace.outcome != outcome { Issue.record("assembly decoded differently: round \(round)") }
            }
        }
        // Damage is usually noticed; values changed in place (a flipped time) cannot be.
        #expect(undetected < Self.mutationsPerSeed / 2)
    }

    private func wellFormed(_ problems: [TraceError], count: Int, checkText: Bool) -> Bool {
        var previousEnd = 0
        for (index, problem) in problems.enumerated() {
            let end = problem.offset + problem.skippedBytes
            guard problem.offset >= previousEnd || problem.offset == 0, problem.skippedBytes >= 0,
                end <= count
            else { return false }
            if checkText {
                let text = problem.description
                guard text.hasPrefix("fuzz.swtrace: byte \(problem.offset): "), !text.contains("\n")
                else { return false }
            }
            // Only the last problem may stop decoding.
            if index < problems.count - 1 && !problem.resumed { return false }
            previousEnd = end
        }
        return true
    }
}
