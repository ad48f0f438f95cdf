import Foundation
import Stallwatch
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport

/// `stallwatch-bench trace`: what recording costs the loop, how compact the file is, how
/// fast it parses, and a long fuzz run of the reader.
enum TraceBenchmarks {
    static func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        // 1. Record cost per event on the loop thread (full mode, and stalls mode with the
        // flight recorder, vs a monitor alone; same run, rounds interleaved), on a chain whose
        // callouts each work 1 µs: about a million callouts a second, which the writer keeps up
        // with. (An empty chain pushes 20 M events a second; most find the ring full and are
        // only counted, and the figure would measure that.)
        let paced = 500_000
        let work: UInt64 = 1_000
        var monitored: [Double] = []
        var recorded: [Double] = []
        var flight: [Double] = []
        // Events the ring dropped, per mode: a push that finds the ring full only counts, so a
        // mode whose writer falls behind looks cheaper than it is.
        var dropped: [TraceMode: UInt64] = [:]
        let loop = MainLoop.main
        for round in 0..<5 {
            let monitor = StallMonitor(loop: loop)
            try monitor.start()
            monitored.append(LoopBenchmarks.chainNanosPerTask(loop, tasks: paced, workNanos: work))
            monitor.stop()
            for (mode, into) in [(TraceMode.full, 0), (.stalls, 1)] {
                let path = directory.appendingPathComponent("cost-\(round)-\(mode.name).trace").path
                let recorder = try TraceRecorder(path: path, loop: loop, mode: mode)
                try recorder.start()
                let nanos = LoopBenchmarks.chainNanosPerTask(loop, tasks: paced, workNanos: work)
                if into == 0 { recorded.append(nanos) } else { flight.append(nanos) }
                recorder.stop()
                let trace = DecodedTrace(decoding: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
                dropped[mode, default: 0] += trace.lostRecords
                try? FileManager.default.removeItem(atPath: path)
            }
        }
        Result(
            name: "trace.record_cost", value: median(recorded) - median(monitored), unit: "ns/event",
            peer: "1 µs chain with monitor, not recording", peerValue: median(monitored),
            ratio: median(recorded) / median(monitored), goal: "<= 40 ns"
        ).printLine()
        Result(
            name: "trace.flight_record_cost", value: median(flight) - median(monitored), unit: "ns/event",
            peer: "full mode's record cost", peerValue: median(recorded) - median(monitored),
            ratio: median(flight) / median(recorded), goal: "<= 40 ns"
        ).printLine()
        for mode in [TraceMode.full, .stalls] {
            Result(
                name: "trace.record_cost_dropped_\(mode.name)", value: Double(dropped[mode] ?? 0),
                unit: "events of 5 × \(paced) callouts", goal: "0"
            ).printLine()
        }

        // 2. Bytes per callout event on disk, from a full-mode recording the writer keeps up with.
        let sizePath = directory.appendingPathComponent("size.trace").path
        let recorder = try TraceRecorder(path: sizePath, loop: loop, mode: .full)
        try recorder.start()
        let posts = 200_000
        let remaining = Box(posts)
        for _ in 0..<posts {
            loop.post {
                spin(nanoseconds: 1_500)
                remaining.value -= 1
                if remaining.value == 0 { loop.stop() }
            }
        }
        loop.run()
        recorder.stop()
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: sizePath)))
        let trace = DecodedTrace(decoding: bytes, fileName: sizePath)
        Result(
            name: "trace.bytes_per_callout", value: Double(bytes.count) / Double(max(1, trace.calloutCount)),
            unit: "B/event", goal: "<= 12 B"
        ).printLine()
        Result(name: "trace.callouts_recorded", value: Double(trace.calloutCount), unit: "events").printLine()
        Result(name: "trace.lost_records", value: Double(trace.lostRecords), unit: "events").printLine()

        // 3. Parse rate of a >= 500 MB trace made by the encoder, on one core.
        let big = generate(megabytes: 512)
        var records = 0
        let start = nowNanos()
        let outcome = big.withUnsafeBytes { buffer in
            TraceDecoder.decode(buffer) { _, _ in records += 1 }
        }
        let seconds = Double(nowNanos() - start) / 1e9
        Result(
            name: "trace.parse_rate", value: Double(records) / seconds / 1e6, unit: "M records/s",
            goal: ">= 30 M records/s"
        ).printLine()
        Result(name: "trace.parse_size", value: Double(big.count) / 1e6, unit: "MB").printLine()
        if !outcome.endedCleanly { throw BenchError("generated trace did not decode cleanly: \(outcome.problems)") }
        // The same file assembled the way `stallwatch report` reads it (records → stalls,
        // callout counts, summaries).
        let assembleStart = nowNanos()
        let assembled = DecodedTrace(decoding: big)
        Result(
            name: "trace.assemble_rate",
            value: Double(assembled.outcome.recordCount) / (Double(nowNanos() - assembleStart) / 1e9) / 1e6,
            unit: "M records/s"
        ).printLine()

        // 4. A long fuzz run of the reader on mutations of a real recorded trace.
        // The first 16 KiB of the real full-mode trace: header, modules, call sites, callouts.
        let mutations = 500_000
        let sample = Array(bytes.prefix(16 << 10))
        let fuzzStart = nowNanos()
        let survived = fuzz(sample, mutations: mutations)
        Result(
            name: "trace.fuzz_rate", value: Double(mutations) / (Double(nowNanos() - fuzzStart) / 1e9),
            unit: "mutations/s"
        ).printLine()
        Result(name: "trace.fuzz_mutations_survived", value: Double(survived), unit: "mutations", goal: "\(mutations)")
            .printLine()
    }

    @inline(never) static func spin(nanoseconds: UInt64) {
        let end = nowNanos() + nanoseconds
        while nowNanos() < end {}
    }

    /// A callout-heavy trace: a header, a few call sites, then callout records.
    static func generate(megabytes: Int) -> [UInt8] {
        var encoder = TraceEncoder()
        var bytes = TraceEncoder.preamble
        bytes.reserveCapacity(megabytes << 20 + 1 << 20)
        encoder.append(
            .header(
                TraceRecord.Header(
                    processName: "bench", pid: 1, wallClockStart: 0, clockBase: 0, mode: .full)), to: &bytes)
        for site in 1...8 {
            encoder.append(
                .callSite(
                    TraceRecord.CallSite(id: UInt64(site), kind: .post, file: "Bench/main.swift", line: UInt32(site))),
                to: &bytes)
        }
        var time: UInt64 = 1_000_000
        var scratch = [UInt8](repeating: 0, count: 64)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        while bytes.count < megabytes << 20 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            let duration = 200 + state % 5_000
            let written = scratch.withUnsafeMutableBytes {
                encoder.encodeCallout(site: 1 + state % 8, mode: 1, start: time, duration: duration, into: $0)
            }
            bytes.append(contentsOf: scratch[0..<written])
            time += duration + 50
        }
        return bytes
    }

    /// Decodes `count` mutated copies; returns how many decoded without crashing (a crash would
    /// end the process, so this is `count` or the process is gone).
    static func fuzz(_ original: [UInt8], mutations count: Int) -> Int {
        var mutator = TraceMutator(seed: 0xD1B5_4A32_D192_ED03)
        var survived = 0
        for _ in 0..<count {
            var copy = original
            mutator.mutate(&copy, count: 1 + Int(mutator.next(below: 4)))
            _ = copy.withUnsafeBytes { TraceDecoder.decode($0) { _, _ in } }
            survived += 1
        }
        return survived
    }
}
