// One accounting rule: the breakdown an app computes in process from `onStallEnded` is the one
// `stallwatch show --json` prints for the same stall of the recorded trace, category by
// category and sample by sample (`StallAccounting`, docs/categories.md).
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct AccountingAgreementTests {
    @Test func theLiveBreakdownIsTheReportsBreakdown() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "stallwatch-accounting-\(UUID()).trace"
        )
        .path
        defer { unlink(path) }
        let live = Locked<[Stall]>([])
        try await onLoopThreadThrowing { loop in
            let recorder = try TraceRecorder(path: path, loop: loop, mode: .stalls)
            recorder.onStallEnded = { stall in live.withLock { $0.append(stall) } }
            try recorder.start()
            loop.post(label: "spin") { spinForStallTest(milliseconds: 70) }
            loop.post(label: "sleep") { sleepForStallTest(milliseconds: 60) }
            loop.post(label: "both") {
                spinForStallTest(milliseconds: 40)
                sleepForStallTest(milliseconds: 40)
            }
            let done = Box(false)
            loop.schedule(after: .milliseconds(300)) { _ in done.value = true }
            while !done.value { loop.runOnce(timeout: .milliseconds(100)) }
            recorder.stop()
        }
        let stalls = live.withLock { $0 }
        #expect(stalls.count >= 3, "\(stalls.map { ($0.callout.label, $0.duration) })")
        let classifier = Classifier()
        for stall in stalls {
            let breakdown = classifier.breakdown(of: stall)
            let run = try runProduct("stallwatch", ["show", path, "--stall", String(stall.id), "--json"])
            #expect(run.exitCode == 0, "\(run)")
            let detail = try #require(
                try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any], "\(run.output)")
            let shares = try #require(detail["categoryShares"] as? [String: Double])
            for category in StallCategory.allCases {
                let reported = shares[category.rawValue] ?? -1
                #expect(
                    abs(reported - breakdown.share(of: category)) < 1e-4,
                    "stall \(stall.id) \(category): report \(reported), live \(breakdown.share(of: category))")
            }
            let samples = try #require(detail["samples"] as? [[String: Any]])
            let weights = StallAccounting.sampleWeights(stall).map { Double($0) / 1e6 }
            #expect(samples.count == weights.count, "stall \(stall.id)")
            for (sample, weight) in zip(samples, weights) {
                let reported = sample["weightMs"] as? Double ?? -1
                #expect(abs(reported - weight) < 0.001, "stall \(stall.id): report \(reported) ms, live \(weight) ms")
            }
            // The weights add up to the stall's duration: nothing before the first sample is lost.
            if let duration = stall.duration, !stall.samples.isEmpty {
                #expect(StallAccounting.sampleWeights(stall).reduce(0, +) == UInt64(duration.nanoseconds))
            }
        }
    }
}
