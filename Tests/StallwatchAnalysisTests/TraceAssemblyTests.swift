// Decoded records assemble into stalls with symbolicated frames, whatever order and
// completeness the records came in.

import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct TraceAssemblyTests {
    /// Traces written before the `platform` record existed read as before, without an architecture.
    @Test func aTraceWithoutAPlatformRecordStillReads() {
        let records = TraceFixture.realistic().filter { $0.kind != .platform }
        let old = DecodedTrace(decoding: TraceFixture.encode(records))
        let new = DecodedTrace(decoding: TraceFixture.encode(TraceFixture.realistic()))
        #expect(old.outcome.endedCleanly)
        #expect(old.architecture == nil)
        #expect(old.header == new.header)
        #expect(old.stalls == new.stalls)
        #expect(old.calloutCount == new.calloutCount)
    }

    /// A sample's `sampleProvenance` record gives its source; traces written before that record
    /// existed read with the assumed sources (a stack: signal; none: none).
    @Test func sampleSourcesComeFromProvenanceRecordsOrAreAssumed() throws {
        let new = DecodedTrace(decoding: TraceFixture.encode(TraceFixture.realistic()))
        let old = DecodedTrace(
            decoding: TraceFixture.encode(TraceFixture.realistic().filter { $0.kind != .sampleProvenance }))
        #expect(old.outcome.endedCleanly)
        let newSamples = try #require(new.stalls.first?.samples)
        let oldSamples = try #require(old.stalls.first?.samples)
        #expect(newSamples.map(\.source) == [.scan, .none, .none])
        #expect(oldSamples.map(\.source) == [.signal, .none, .none])
        // A provenance record for a sample that is not there changes nothing.
        var records = TraceFixture.realistic()
        records.append(.sampleProvenance(.init(stall: 7, sample: 99, source: .perf)))
        let extra = DecodedTrace(decoding: TraceFixture.encode(records))
        #expect(extra.stalls == new.stalls)
    }

    @Test func stallsAreAssembledAndSymbolicated() throws {
        let trace = DecodedTrace(
            decoding: TraceFixture.encode(TraceFixture.realistic()), fileName: "feed.swtrace")
        #expect(trace.outcome.endedCleanly)
        #expect(trace.header == TraceFixture.header)
        #expect(trace.architecture == "x86_64")
        #expect(trace.modules.map(\.index) == [1, 2])
        #expect(trace.calloutCount == 240)
        #expect(trace.congestion.count == 2)
        #expect(trace.frameClock.count == 1)
        #expect(trace.latencyHistograms.count == 1)
        #expect(trace.lostRecords == 17)
        #expect(trace.orphanSamples == 0)
        #expect(trace.stalls.map(\.id) == [7, 8])

        let first = trace.stalls[0]
        #expect(first.end == 81_234_735_000_000)
        #expect(first.tier == .microHang)  // 135 ms, detected as a hitch
        #expect(first.flags == [.suspended, .captureTimedOut])
        #expect(
            first.callout
                == CalloutIdentity(
                    kind: .timer, label: "feed.refresh", file: "FeedApp/Feed.swift", line: 42,
                    mode: "default", phase: .beforeTimers))
        #expect(first.samples.count == 3)
        let frames = first.samples[0].frames
        #expect(frames.count == 4)
        #expect(frames[0].symbol == "fsync")
        #expect(frames[0].module == "/usr/lib/x86_64-linux-gnu/libc.so.6")
        #expect(frames[1].symbol == "FeedApp.FeedController.reload() -> ()")
        #expect(frames[1].file == "FeedApp/Feed.swift")
        #expect(frames[1].line == 57)
        #expect(frames[3].symbol == nil && frames[3].module == nil)
        #expect(first.samples[0].annotation == Annotation(label: "feed.reload", category: .database))
        #expect(first.samples[0].syscallName == "fsync")
        #expect(first.samples[0].wchan == "jbd2_log_wait_commit")
        #expect(first.samples[2].syscall == -1)

        let second = trace.stalls[1]
        // Unfinished and the last stall (its process was killed in it): it ran until the last
        // time the trace holds (a callout that ended 0.98 s after it began), a hang.
        #expect(second.end == 81_301_004_184_373)
        #expect(second.flags == [.unfinished])
        #expect(second.tier == .hang)
        #expect(second.callout.mode == "tracking")
        #expect(second.callout.label == nil)
        #expect(second.samples.first?.annotation == Annotation(label: "thumbnails"))
    }

    /// An ended stall's `stallRetimed` (its executor's own tick) replaces its start and end, and
    /// its tier follows; an unfinished stall's is ignored (its end is not known).
    @Test func aRetimedStallTakesItsExecutorsTimes() {
        let records: [TraceRecord] = [
            .stallBegan(.init(id: 1, start: 100_000_000, site: 1, mode: 0, phase: .beforeSources, tier: .hitch)),
            .sample(.init(stall: 1, index: 0, time: 120_000_000, state: .running, frames: [0x1234])),
            .stallEnded(.init(id: 1, end: 200_000_000)),
            .stallRetimed(.init(id: 1, start: 95_000_000, end: 201_000_000)),
            .stallBegan(.init(id: 2, start: 300_000_000, site: 1, mode: 0, phase: .beforeSources, tier: .hitch)),
            .stallRetimed(.init(id: 2, start: 290_000_000, end: 400_000_000)),
        ]
        let trace = DecodedTrace(decoding: TraceFixture.encode(records))
        #expect(trace.outcome.endedCleanly, "\(trace.outcome.problems)")
        #expect(trace.stalls.map(\.start) == [95_000_000, 300_000_000])
        // The unfinished one reaches no later record: it is known to have run for its budget.
        #expect(trace.stalls.map(\.end) == [201_000_000, 316_666_667])
        #expect(trace.stalls[0].tier == .microHang)  // 106 ms
        #expect(trace.stalls[1].flags.contains(.unfinished))
    }

    @Test func missingDefinitionsAreFilledInPlainly() {
        let records: [TraceRecord] = [
            .stallBegan(.init(id: 1, start: 1_000, site: 99, mode: 5, phase: .beforeSources, tier: .hang)),
            .sample(.init(stall: 1, index: 0, time: 2_000, state: .running, annotation: 4, frames: [0x1234])),
            .sample(.init(stall: 2, index: 0, time: 2_000, state: .running)),
            .stallEnded(.init(id: 1, end: 500)),  // before its start: damaged, but no trap
        ]
        let trace = DecodedTrace(decoding: TraceFixture.encode(records))
        #expect(trace.header == nil)
        #expect(trace.orphanSamples == 1)
        let stall = trace.stalls[0]
        #expect(stall.callout.label == "unknown call site 99")
        #expect(stall.callout.file == "?")
        #expect(stall.callout.mode == "mode 5")
        #expect(stall.tier == .hang)
        #expect(stall.samples[0].annotation == nil)
        #expect(stall.samples[0].frames == [Frame(address: 0x1234)])
    }

    /// The samples of one look may share a time: each keeps its thread and the records about
    /// it (named by index), and they share the look's time equally.
    @Test func samplesOfOneLookMayShareATimeAndKeepTheirOwnRecords() {
        let records: [TraceRecord] = [
            .stallBegan(.init(id: 1, start: 1_000_000, site: 1, mode: 0, phase: .beforeSources, tier: .hitch)),
            .sample(.init(stall: 1, index: 0, tid: 11, look: 0, time: 2_000_000, state: .sleeping, frames: [0x10])),
            .sampleWait(.init(stall: 1, sample: 0, kind: .mutex, operation: "futex", ownerTID: 99)),
            .sample(.init(stall: 1, index: 1, tid: 12, look: 0, time: 2_000_000, state: .running, frames: [0x20])),
            .sampleProvenance(.init(stall: 1, sample: 1, source: .perf)),
            .sample(.init(stall: 1, index: 2, tid: 11, look: 1, time: 3_000_000, state: .sleeping, frames: [0x10])),
            .sample(.init(stall: 1, index: 3, tid: 12, look: 1, time: 3_000_001, state: .running, frames: [0x20])),
            .stallEnded(.init(id: 1, end: 4_000_000)),
        ]
        let trace = DecodedTrace(decoding: TraceFixture.encode(records))
        #expect(trace.outcome.endedCleanly, "\(trace.outcome.problems)")
        let samples = trace.stalls[0].samples
        #expect(samples.map(\.tid) == [11, 12, 11, 12])
        #expect(samples.map(\.look) == [0, 0, 1, 1])
        #expect(samples.map(\.frames.first?.address) == [0x10, 0x20, 0x10, 0x20])
        #expect(samples.map(\.source) == [.signal, .perf, .signal, .signal])
        #expect(samples.map { $0.wait?.owner?.tid } == [99, nil, nil, nil])
        #expect(StallAccounting.sampleWeights(trace.stalls[0]) == [1_000_000, 1_000_000, 500_000, 500_000])
    }
}
