// A report reads a fleet's samples off the decoder's sample table without building them; what
// it works out of each stall must be what the analysis of the stall (samples built) works out,
// for every kind of sample, and a stall built in code must analyze as its decoded self.
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct ColumnAnalysisTests {
    let ms = Fixture.millisecond

    /// A trace with annotations (one with a category), kernel counters, wait facts, a wait
    /// channel, samples without frames, a capture that timed out, a sample's provenance, an
    /// unfinished stall, a stall whose samples are written out of order and between another's,
    /// a second `stallBegan` for one id and samples of a stall never begun.
    func mixedTrace() -> [UInt8] {
        var builder = TraceBuilder()
        let base = Fixture.clockBase
        builder.add([
            .header(
                .init(
                    processName: "Mixed", pid: 7, wallClockStart: 1_700_000_000 * Fixture.second, clockBase: base,
                    mode: .stalls, thresholds: .default, sampleInterval: .milliseconds(5))),
            .module(.init(index: 1, loadAddress: 0x1000, path: "/opt/mixed/Mixed")),
            .module(.init(index: 2, loadAddress: 0x7000_0000, path: "/usr/lib/x86_64-linux-gnu/libc.so.6")),
            .callSite(.init(id: 1, kind: .post, label: "reload", file: "Mixed/Feed.swift", line: 12)),
            .callSite(.init(id: 2, kind: .timer, file: "Mixed/Store.swift", line: 30)),
            .modeName(.init(id: 0, name: "default")),
            .annotation(.init(id: 1, annotation: Annotation(label: "decode thumbnails", category: .compute))),
            .annotation(.init(id: 2, annotation: Annotation(label: "just a label"))),
            .symbol(.init(address: 0x1000, module: 1, name: "Mixed.main()", file: "Mixed/main.swift", line: 3)),
            .symbol(.init(address: 0x1100, module: 1, name: "Mixed.Feed.reload()", file: "Mixed/Feed.swift", line: 9)),
            .symbol(.init(address: 0x1200, module: 1, name: "Mixed.Store.save()", file: "Mixed/Store.swift", line: 40)),
            .symbol(.init(address: 0x7000_2000, module: 2, name: "fsync")),
            .symbol(.init(address: 0x7000_2200, module: 2, name: "pthread_mutex_lock")),
        ])
        let compute: [UInt64] = [0x1100, 0x1000]
        let save: [UInt64] = [0x7000_2000, 0x1200, 0x1000]
        let lock: [UInt64] = [0x7000_2200, 0x1100, 0x1000]
        let unsymbolicated: [UInt64] = [0x1180, 0x1000]
        func began(_ id: UInt64, _ start: UInt64, site: UInt64 = 1) -> TraceRecord {
            .stallBegan(
                .init(id: id, start: base + start * ms, site: site, mode: 0, phase: .beforeSources, tier: .hitch))
        }
        func sample(
            _ id: UInt64, _ time: UInt64, _ state: ThreadState, _ frames: [UInt64], syscall: Int32? = nil,
            wchan: String? = nil, annotation: UInt64 = 0, timedOut: Bool = false
        ) -> TraceRecord {
            .sample(
                .init(
                    stall: id, index: time, time: base + time * ms, state: state, syscall: syscall, wchan: wchan,
                    cpuTime: time * 100,
                    annotation: annotation, captureTimedOut: timedOut, frames: frames))
        }
        func ended(_ id: UInt64, _ end: UInt64) -> TraceRecord { .stallEnded(.init(id: id, end: base + end * ms)) }
        var counters = KernelCounters()
        counters.readBytes = 4096
        var delta = KernelCounters()
        delta.readBytes = 1 << 20
        builder.add([
            // Compute, then annotated (with and without a category), then no frames at all.
            began(1, 100),
            sample(1, 117, .running, compute), sample(1, 122, .running, compute),
            sample(1, 127, .running, compute, annotation: 1), sample(1, 132, .running, compute, annotation: 2),
            sample(1, 137, .running, []), sample(1, 142, .running, unsymbolicated),
            ended(1, 160),
            // I/O with counters, waits and a timed-out capture; its samples are written late,
            // out of order and between those of stall 3.
            began(2, 200, site: 2), began(3, 300),
            sample(3, 317, .sleeping, lock, syscall: Fixture.futex, wchan: "futex_wait_queue"),
            sample(2, 227, .diskSleep, save, syscall: Fixture.fsync),
            sample(2, 217, .diskSleep, save, syscall: Fixture.fsync, timedOut: true),
            sample(3, 322, .sleeping, lock, syscall: Fixture.futex, wchan: "futex_wait_queue"),
            .sampleCounters(.init(stall: 2, sample: 217, counters: counters, delta: delta)),
            .sampleWait(.init(stall: 2, sample: 227, kind: .file, operation: "fsync", fd: 3, target: "/db")),
            .sampleProvenance(.init(stall: 3, sample: 322, source: .scan)),
            ended(2, 250), ended(3, 340),
            // Begun twice (the first counts), and unfinished; and samples of a stall never begun.
            began(4, 400), began(4, 410),
            sample(4, 417, .running, compute), sample(4, 422, .sleeping, lock, syscall: Fixture.futex),
            sample(9, 430, .running, compute),
        ])
        return builder.bytes
    }

    /// Every figure of `figures` as text (the frame namer by how it names the stack).
    func text(_ figures: StallFigures) -> String {
        let stack = figures.representativeFrames.map { figures.names.namer.name($0) }
        return "\(figures.tracePath) \(figures.id) \(figures.start) \(figures.unfinished) \(figures.tier) "
            + "\(figures.file):\(figures.line) \(figures.durationNanos) \(figures.overrunNanos) "
            + "\(figures.unsampledNanos) \(figures.breakdown) \(figures.category) \(figures.key) \(stack) "
            + "\(figures.confidence) \(figures.sampleCount) \(figures.waits)"
    }

    @Test func aStallReadOffTheTableHasTheFiguresOfItsAnalysis() throws {
        for bytes in [mixedTrace(), Fixture.standard(mode: .full, withCallouts: true), Fixture.app()] {
            let loaded = try TraceLoader.load(bytes: bytes, path: "t.swtrace").get()
            #expect(loaded.trace.bareStalls.allSatisfy { $0.samples.isEmpty })
            let expected = ReportBuilder().analyze([loaded])[0].map { text(StallFigures($0)) }
            #expect(expected.count == loaded.trace.bareStalls.count)
            // One memo for both traces' worth of stalls, as a worker keeps it across traces.
            let portable = PortableMemo()
            for _ in 0..<2 {
                let figures = StallFigures.of(loaded, classifier: Classifier(), memo: AppFrameMemo(portable: portable))
                #expect(figures.map(text) == expected)
            }
            // The same stalls built in code (samples and all) analyze the same.
            let budget = loaded.trace.header?.thresholds.budget ?? TierThresholds.default.budget
            let built = loaded.trace.stalls.map {
                AnalyzedStall(
                    $0, tracePath: loaded.path, budget: budget, classifier: Classifier(),
                    names: FrameNamer(modules: loaded.trace.modules))
            }
            #expect(built.map { text(StallFigures($0)) } == expected)
        }
    }

    @Test func aStallsTableOfItsOwnGivesItsSamplesBack() throws {
        for bytes in [mixedTrace(), Fixture.standard(mode: .full, withCallouts: true), Fixture.app()] {
            let trace = try TraceLoader.load(bytes: bytes, path: "t.swtrace").get().trace
            for stall in trace.stalls {
                #expect(SampleTable(stall).samples(of: 0, stall: stall.id) == stall.samples)
            }
        }
    }

    @Test func stallsKeptByTallyReportAsStallsLetGo() throws {
        let traces = [mixedTrace(), Fixture.standard(mode: .full, withCallouts: true), Fixture.app()]
        let loaded = try traces.map { try TraceLoader.load(bytes: $0, path: "t.swtrace").get() }
        let builder = ReportBuilder(workers: 1)
        let kept = builder.tally(traces.count, keepStalls: true) { index in
            TraceLoader.load(bytes: traces[index], path: "t.swtrace")
        }
        let letGo = builder.tally(traces.count, keepStalls: false) { index in
            TraceLoader.load(bytes: traces[index], path: "t.swtrace")
        }
        #expect(kept.analyzed.map(\.count) == loaded.map(\.trace.bareStalls.count))
        let expected = try JSONOutput.encode(builder.report(loaded, analyzed: builder.analyze(loaded), top: 10))
        #expect(try JSONOutput.encode(builder.report(kept, top: 10)) == expected)
        #expect(try JSONOutput.encode(builder.report(letGo, top: 10)) == expected)
    }

    @Test func theMixedTraceHasEveryKindOfSample() throws {
        let trace = try TraceLoader.load(bytes: mixedTrace(), path: "t.swtrace").get().trace
        #expect(trace.orphanSamples == 1)
        #expect(trace.stalls.map(\.id) == [1, 2, 3, 4])
        #expect(trace.stalls[1].samples.map(\.time) == [217, 227].map { Fixture.clockBase + $0 * ms })
        #expect(trace.stalls[1].flags.contains(.captureTimedOut))
        #expect(trace.stalls[1].samples[0].countersDelta != nil && trace.stalls[1].samples[1].wait != nil)
        #expect(trace.stalls[2].samples[1].source == .scan && trace.stalls[2].samples[0].wchan != nil)
        // Unfinished is the flag: a decoded stall always has an end (for this one, how far the
        // trace reaches).
        #expect(trace.stalls[3].flags.contains(.unfinished) && trace.stalls[3].start == Fixture.clockBase + 400 * ms)
        #expect(
            trace.stalls[0].samples.map(\.annotation?.label) == [
                nil, nil, "decode thumbnails", "just a label", nil, nil,
            ])
        #expect(trace.stalls[0].samples[4].frames.isEmpty)
    }
}
