import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchReport

/// `stallwatch-bench fleet DIR`: how fast many traces are read and added up. In one run:
/// decoding + aggregation rate on one core and on all cores; `report` (load, aggregate, render,
/// in this process) against `cat DIR/* > /dev/null` on the same bytes, page cache warm for
/// both; and one large trace decoded serially and split between sync markers.
enum FleetBenchmarks {
    static func run(directory: String) throws {
        let paths = TraceLoader.expand([directory])
        guard !paths.isEmpty else { throw BenchError("\(directory): no *.swtrace files (run generate-fleet first)") }
        let cores = TraceLoader.availableCores
        let bytes = paths.reduce(0) { $0 + (fileSize($1)) }

        // Warm the page cache, then time cat: the cost of just reading the bytes.
        _ = try catSeconds(directory)
        let cat = median((0..<3).map { _ in (try? catSeconds(directory)) ?? .nan })

        /// One whole report; `phases` are the seconds of loading (read, decode, classify), adding
        /// up and rendering.
        func pipeline(workers: Int) -> (seconds: Double, records: Int, phases: [Double]) {
            let start = nowNanos()
            // As `stallwatch report` does: each trace analyzed and added up by the thread that
            // read it.
            let builder = ReportBuilder(workers: workers)
            let tallied = builder.loadAndTally(paths: paths)
            let loadedAt = nowNanos()
            let report = builder.report(tallied, top: 10)
            let addedAt = nowNanos()
            let text = ReportText.render(report, colour: false)
            precondition(!text.isEmpty)
            let end = nowNanos()
            let phases = [loadedAt - start, addedAt - loadedAt, end - addedAt].map { Double($0) / 1e9 }
            let records = tallied.results.reduce(0) { $0 + ((try? $1.get())?.trace.outcome.recordCount ?? 0) }
            return (Double(end - start) / 1e9, records, phases)
        }
        let one = (0..<3).map { _ in pipeline(workers: 1) }
        let all = (0..<3).map { _ in pipeline(workers: cores) }
        let records = one[0].records
        let oneRate = Double(records) / median(one.map(\.seconds))
        let allRate = Double(records) / median(all.map(\.seconds))
        Result(name: "fleet.traces", value: Double(paths.count), unit: "traces").printLine()
        Result(name: "fleet.bytes", value: Double(bytes) / 1_048_576, unit: "MiB").printLine()
        Result(name: "fleet.records_per_second.1_core", value: oneRate, unit: "records/s").printLine()
        Result(
            name: "fleet.records_per_second.all_cores", value: allRate, unit: "records/s",
            peer: "the same on 1 core", peerValue: oneRate, ratio: allRate / oneRate,
            goal: ">= 1.8x on 2 cores (\(cores) cores here)"
        ).printLine()
        let report = median(all.map(\.seconds))
        Result(
            name: "fleet.report_time_over_cat", value: report / cat, unit: "x",
            peer: "cat DIR/* > /dev/null, seconds", peerValue: cat, goal: "<= 3x"
        ).printLine()
        Result(name: "fleet.report_seconds", value: report, unit: "s").printLine()
        // Where the time goes, on one core and on all: what does not shrink with more cores is
        // what keeps the speed-up from the core count.
        for (label, runs) in [("1_core", one), ("all_cores", all)] {
            for (index, phase) in ["load", "aggregate", "render"].enumerated() {
                Result(
                    name: "fleet.report_phase.\(phase).\(label)", value: median(runs.map { $0.phases[index] }),
                    unit: "s"
                ).printLine()
            }
        }

        // One large trace: serial decode against decoding between sync markers on every core.
        let large = TraceBenchmarks.generate(megabytes: 64)
        let count = DecodedTrace(decoding: large).outcome.recordCount
        func decodeSeconds(workers: Int) -> Double {
            large.withUnsafeBytes { buffer in
                let start = nowNanos()
                let trace = TraceLoader.decode(buffer, fileName: nil, workers: workers)
                precondition(trace.outcome.recordCount == count)
                return Double(nowNanos() - start) / 1e9
            }
        }
        let serial = median((0..<3).map { _ in decodeSeconds(workers: 1) })
        let split = median((0..<3).map { _ in decodeSeconds(workers: cores) })
        Result(name: "fleet.large_file.records_per_second.1_core", value: Double(count) / serial, unit: "records/s")
            .printLine()
        Result(
            name: "fleet.large_file.records_per_second.all_cores", value: Double(count) / split, unit: "records/s",
            peer: "the same on 1 core", peerValue: Double(count) / serial, ratio: serial / split,
            goal: ">= 1.8x on 2 cores (64 MiB full-mode trace)"
        ).printLine()
    }

    static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    static func catSeconds(_ directory: String) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "cat \"$1\"/* > /dev/null", "sh", directory]
        let start = nowNanos()
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("cat \(directory)/* failed") }
        return Double(nowNanos() - start) / 1e9
    }
}
