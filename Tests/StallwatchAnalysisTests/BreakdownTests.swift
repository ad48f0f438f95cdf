// A stall's breakdown weighs each sample by the time until the next one (the last until the
// stall's end, the first also for the time before it: `StallAccounting`); the largest category
// dominates.

import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct BreakdownTests {
    let classifier = Classifier()
    let callout = CalloutIdentity(
        kind: .post, file: "FeedApp/FeedController.swift", line: 42, phase: .beforeSources)

    func at(_ time: UInt64, _ sample: Sample) -> Sample {
        var sample = sample
        sample.time = time
        return sample
    }

    /// start 0; compute at 20 ms, fsync 70 ms, NSLock 170 ms, compute 200 ms; end 300 ms.
    var mixedStall: Stall {
        Stall(
            id: 7, start: 0, end: 300 * ms, tier: .hang, callout: callout,
            samples: [
                at(20 * ms, Fixture.compute), at(70 * ms, Fixture.fsyncTimedOut),
                at(170 * ms, Fixture.nsLock), at(200 * ms, Fixture.sqliteQuery),
                at(260 * ms, Fixture.compute),
            ])
    }

    @Test func mixedStallIsTimeWeighted() {
        let breakdown = classifier.breakdown(of: mixedStall)
        #expect(breakdown.sampleCount == 5)
        #expect(breakdown.totalNanos == 300 * ms)
        #expect(breakdown.nanos(for: .compute) == 110 * ms)  // 20 before the first sample + 50 + 40
        #expect(breakdown.nanos(for: .io) == 100 * ms)
        #expect(breakdown.nanos(for: .lockWait) == 30 * ms)
        #expect(breakdown.nanos(for: .database) == 60 * ms)
        #expect(breakdown.nanos(for: .other) == 0)
        #expect(breakdown.dominant == .compute)
        #expect(abs(breakdown.dominantShare - 110.0 / 300.0) < 1e-9)
        #expect(abs(breakdown.share(of: .io) - 100.0 / 300.0) < 1e-9)
        #expect(
            breakdown.topReasons.map(\.reason) == [
                "FeedApp.ImageResizer.resize(_: FeedApp.Bitmap, to: Swift.Int)", "fsync", "sqlite3_step",
                "Foundation.NSLock.lock()",
            ])
        #expect(breakdown.topReasons[0].nanos == 110 * ms)
        #expect(breakdown.topReasons[0].category == .compute)
        // The same shares as the report's rule gives.
        #expect(StallAccounting.sampleWeights(mixedStall) == [70, 100, 30, 60, 40].map { $0 * ms })
    }

    @Test func reasonsAreLimited() {
        let breakdown = classifier.breakdown(of: mixedStall, maxReasons: 2)
        #expect(
            breakdown.topReasons.map(\.reason) == [
                "FeedApp.ImageResizer.resize(_: FeedApp.Bitmap, to: Swift.Int)", "fsync",
            ])
    }

    @Test func samplesOutOfOrderAreSortedFirst() {
        var stall = mixedStall
        stall.samples.reverse()
        #expect(classifier.breakdown(of: stall) == classifier.breakdown(of: mixedStall))
    }

    @Test func unfinishedStallStopsAtTheLastSample() {
        var stall = mixedStall
        stall.end = nil
        stall.flags = [.unfinished]
        let breakdown = classifier.breakdown(of: stall)
        #expect(breakdown.totalNanos == 260 * ms)
        #expect(breakdown.nanos(for: .compute) == 70 * ms)
        #expect(breakdown.topReasons.count == 4)
    }

    @Test func singleSampleOfAnUnfinishedStallStandsForTheTimeBeforeIt() {
        let stall = Stall(
            id: 1, start: 0, end: nil, tier: .severe, callout: callout,
            samples: [at(20 * ms, Fixture.fsyncTimedOut)], flags: [.unfinished, .captureTimedOut])
        let breakdown = classifier.breakdown(of: stall)
        #expect(breakdown.totalNanos == 20 * ms)
        #expect(breakdown.topReasons == [ReasonTime(category: .io, reason: "fsync", nanos: 20 * ms, share: 1)])
    }

    @Test func aSampleWithoutMeasurableTimeStillHasAVerdict() {
        // Unfinished, and its only sample taken as the callout started: no time to share out.
        let stall = Stall(
            id: 1, start: 20 * ms, end: nil, tier: .severe, callout: callout,
            samples: [at(20 * ms, Fixture.fsyncTimedOut)], flags: [.unfinished, .captureTimedOut])
        let breakdown = classifier.breakdown(of: stall)
        #expect(breakdown.totalNanos == 0)
        #expect(breakdown.dominant == .io)
        #expect(breakdown.dominantShare == 1)
        #expect(
            breakdown.topReasons == [ReasonTime(category: .io, reason: "fsync", nanos: 0, share: 1)])
    }

    @Test func stallWithoutSamplesHasNoDominantCategory() {
        let stall = Stall(id: 2, start: 0, end: 40 * ms, tier: .hitch, callout: callout)
        let breakdown = classifier.breakdown(of: stall)
        #expect(breakdown.dominant == nil)
        #expect(breakdown.dominantShare == 0)
        #expect(breakdown.topReasons.isEmpty)
        #expect(StallCategory.allCases.allSatisfy { breakdown.nanos(for: $0) == 0 })
    }

    @Test func precomputedClassificationsGiveTheSameBreakdown() {
        let stall = mixedStall
        let direct = StallBreakdown(
            samples: stall.samples, classifications: classifier.classify(stall.samples),
            weights: StallAccounting.sampleWeights(stall))
        #expect(direct == classifier.breakdown(of: stall))
    }
}
