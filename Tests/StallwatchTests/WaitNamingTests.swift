// Every knowable wait is named: an msync names the mapping's file, an I/O syscall's file fact is
// in every sample that has the syscall, under a CPU hog on every core too, and the facts reach the
// trace, `show` and `report`. (A page fault's file, from its address: WaitFactTests.)
import CStallwatchShims
import Dispatch
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Synchronization
import Testing

@testable import Stallwatch

@Suite(.serialized) struct WaitNamingTests {
    /// One line per sample: offset, state, syscall, source and fact.
    private func describe(_ stall: Stall, _ name: String) -> String {
        var lines = ["\(name): \(stall.durationNanos / 1_000_000) ms, \(stall.samples.count) samples"]
        for sample in stall.samples {
            let delta = sample.countersDelta
            lines.append(
                "  +\((sample.time - stall.start) / 1_000_000) ms \(sample.state.procCode) "
                    + "\(sample.syscallName ?? sample.syscall.map(String.init) ?? "running") \(sample.source) "
                    + "d(sys=\((delta?.systemNanos ?? 0) / 1_000_000) usr=\((delta?.userNanos ?? 0) / 1_000_000) "
                    + "rb=\(delta?.readBytes ?? 0) syscr=\(delta?.readSyscalls ?? 0) maj=\(delta?.majorFaults ?? 0)) "
                    + "wait=\(sample.wait?.summary ?? "-")")
        }
        let text = lines.joined(separator: "\n")
        print(text)
        return text
    }

    @Test(
        .timingSensitive(
            "the msync lasts as long as the writeback the flusher has not done yet (60–540 ms here); "
                + "a flusher that got there first would leave an msync within the budget"))
    func msyncOfADirtySharedMappingNamesTheFile() async throws {
        let path = Scenarios.temporaryPath("msync")
        defer { unlink(path) }
        writeFile(path, megabytes: 256, sync: true)
        // Dirtied here, so the stall is the msync alone: it writes back the file's dirty pages
        // in its range, whichever mapping dirtied them (74–541 ms for 128 MB on this machine).
        dirtyMappingOf(path)
        let run = try await monitored { loop, measure in
            measure.post(loop) { syncMappingForStallTest(path) }
        }
        let stall = try #require(run.ended.first)
        let text = describe(stall, "msync of a dirty 256 MB shared mapping")
        let inMsync = stall.samples.filter { $0.syscallName == "msync" }
        #expect(!inMsync.isEmpty, "no sample caught the msync: \(text)")
        for sample in inMsync {
            #expect(sample.wait?.kind == .file && sample.wait?.operation == "msync", "\(text)")
            #expect(sample.wait?.target == path, "\(text)")
            #expect(sample.wait?.summary == "msync of \(path)")
        }
    }

    @Test
    func aLargeReadUnderACPUHogNamesTheFileInEverySampleWithTheSyscall() async throws {
        let path = evictedTestFile(megabytes: 256)
        defer { unlink(path) }
        let hog = CPUHog(threads: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        let kept = Locked<Data?>(nil)
        let run = try await monitored { loop, measure in
            measure.post(loop) { readWholeFileForStallTest(path, keep: kept) }
        }
        hog.stop()
        kept.withLock { $0 = nil }
        let stall = try #require(run.ended.first)
        let text = describe(stall, "read of an evicted 256 MB file, every core busy")
        func named(_ sample: Sample) -> Bool {
            sample.wait?.kind == .file && sample.wait?.target == path && sample.wait?.fd != nil
        }
        // The samples that have the syscall: /proc shows it (blocked in it, state D), or perf took
        // the stack inside it (the user IP in libc's read wrapper; kernel samples need root or
        // CAP_PERFMON). While the thread is on a CPU or waits for one, /proc says only "running".
        let inRead = stall.samples.filter { sample in
            sample.syscallName == "read"
                || (sample.source == .perf
                    && sample.frames.first?.symbol.map(SampleFacts.wrapperSyscall(named:)) == "read")
        }
        if run.statistics.common.perfSampling == .kernelAndUser {
            #expect(!inRead.isEmpty, "no sample had the read: \(text)")
        }
        #expect(inRead.allSatisfy(named), "\(text)")
        // Once named, every later sample of the same read names it, although user and system
        // time move by scaled ticks under the hog, up to the sample whose syscr moved: the read
        // returned before it, and the callout may run on after it (under ASan it does, 20 ms).
        let fromFirst = stall.samples.drop { !named($0) }.prefix { ($0.countersDelta?.readSyscalls ?? 0) == 0 }
        #expect(!fromFirst.isEmpty, "\(text)")
        #expect(fromFirst.allSatisfy(named), "\(text)")
    }

    @Test func aRecordedTraceCarriesTheFactsToShowAndReport() async throws {
        let trace = Scenarios.temporaryPath("naming") + ".trace"
        let mapped = evictedTestFile(megabytes: 128)
        let synced = Scenarios.temporaryPath("msync")
        writeFile(synced, megabytes: 256, sync: true)
        dirtyMappingOf(synced)
        defer { for path in [trace, mapped, synced] { unlink(path) } }
        let decoded = try await recordedTrace(at: trace) { loop in
            loop.post(label: "fault") { touchMappedFileForStallTest(mapped) }
            loop.post(label: "msync") { syncMappingForStallTest(synced) }
        }
        #expect(decoded.outcome.endedCleanly, "\(decoded.outcome.problems)")
        // Kind 19 keeps the fault address (its `address` field) and the mapped file.
        let fault = try #require(decoded.stalls.first { $0.callout.label == "fault" })
        let faults = fault.samples.compactMap(\.wait).filter { $0.kind == .pageFault && $0.target == mapped }
        #expect(!faults.isEmpty && faults.allSatisfy { $0.address != nil }, "\(fault.samples.map(\.wait))")
        let sync = try #require(decoded.stalls.first { $0.callout.label == "msync" })
        #expect(sync.samples.contains { $0.wait?.operation == "msync" && $0.wait?.target == synced })
        for stall in [fault, sync] {
            let show = try runProduct(
                "stallwatch", ["show", trace, "--stall", String(stall.id)], environment: ["COLUMNS": "400"])
            print(show.output.split(separator: "\n").filter { $0.contains("waited on") }.joined(separator: "\n"))
            let expected = stall.id == fault.id ? "page fault in \(mapped)" : "msync of \(synced)"
            #expect(show.exitCode == 0 && show.output.contains("waited on \(expected)"), "\(show.output)")
        }
        let report = try runProduct("stallwatch", ["report", trace], environment: ["COLUMNS": "400"])
        #expect(report.output.contains("page fault in \(mapped)"), "\(report.output)")
    }
}

/// Records a trace at `path`, in `mode` with the flight recorder's `flightWindow`, of a fresh
/// loop on which `post` posts its work, runs the loop `runFor` (300 ms), and decodes the trace.
func recordedTrace(
    at path: String, mode: TraceMode = .stalls, flightWindow: Duration = TraceRecorder.defaultFlightWindow,
    runFor: Duration = .milliseconds(300), _ post: @escaping @Sendable (MainLoop) -> Void
) async throws -> DecodedTrace {
    try await onLoopThreadThrowing { loop in
        let recorder = try TraceRecorder(path: path, loop: loop, mode: mode, flightWindow: flightWindow)
        try recorder.start()
        post(loop)
        let done = Box(false)
        loop.schedule(after: runFor) { _ in done.value = true }
        while !done.value { loop.runOnce(timeout: .milliseconds(100)) }
        recorder.stop()
    }
    return DecodedTrace(decoding: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), fileName: path)
}

/// A file of `megabytes` on disk and out of the page cache.
func evictedTestFile(megabytes: Int) -> String {
    let path = Scenarios.temporaryPath("evicted")
    writeFile(path, megabytes: megabytes, sync: true)
    let fd = open(path, O_RDONLY)
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
    close(fd)
    return path
}

/// Dirties every page of `path` through a shared mapping, and unmaps it (the pages stay dirty).
func dirtyMappingOf(_ path: String) {
    let (base, length) = mapWholeFile(path, writable: true)
    let bytes = base.assumingMemoryBound(to: UInt8.self)
    for offset in stride(from: 0, to: length, by: 4096) { bytes[offset] &+= 1 }
    munmap(base, length)
}

/// msyncs a shared mapping of the whole of `path`: writes back its dirty pages and waits.
@inline(never) func syncMappingForStallTest(_ path: String) {
    let (base, length) = mapWholeFile(path, writable: true)
    msync(base, length, MS_SYNC)
    munmap(base, length)
}

/// Threads that spin until stopped, one per core: the loop thread competes for a CPU.
final class CPUHog: Sendable {
    private let running = Atomic<Bool>(true)
    private let done = DispatchSemaphore(value: 0)
    private let count: Int

    init(threads: Int) {
        count = threads
        for _ in 0..<threads {
            Thread { [self] in
                var x: UInt64 = 1
                while running.load(ordering: .relaxed) { x = x &* 6_364_136_223_846_793_005 &+ 1 }
                blackHole(x)
                done.signal()
            }.start()
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        for _ in 0..<count { done.wait() }
    }
}
