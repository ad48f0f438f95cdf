// A @MainActor async function that blocks MainLoop.main shows its awaiting callers as pool jobs
// do: the recorded stall's samples name the blocking call, the repository, the service and the
// request handler, innermost first, the callers marked async, up to the task's root.
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@Suite struct MainActorAsyncChainTests {
    static let names = [
        "MainActorChain.loadRowsBlocking", "MainActorChain.repository", "MainActorChain.service",
        "MainActorChain.handleRequest",
    ]

    @Test(
        .timeLimit(.minutes(1)),
        .disabled(if: Sanitizer.address, "ASan's usleep interceptor hides the blocker from the stack scan"),
        arguments: ["spin", "sleep"])
    func aBlockingMainActorChainIsRecordedWithItsAwaitingCallers(blocking: String) throws {
        // TSan delivers the sampling signal late, away from the running culprit: no sample of
        // the spinning case is in it there (the sleeping one is read by the stack scan).
        if Sanitizer.thread && blocking == "spin" { return }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "stallwatch-main-actor-async-\(blocking)-\(UUID()).trace"
        ).path
        defer { unlink(path) }
        let run = try runProduct(
            "StallwatchTestHost", ["main-actor-async", blocking], environment: ["STALLWATCH_TRACE": path])
        #expect(run.exitCode == 0 && run.output.contains("rows=1") && !run.output.contains("timeout=1"), "\(run)")
        let trace = DecodedTrace(decoding: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), fileName: path)
        let samples = trace.stalls.flatMap(\.samples).filter { sample in
            sample.frames.contains { $0.symbol?.contains(Self.names[0]) == true }
        }
        #expect(
            !samples.isEmpty, "\(trace.stalls.map { $0.samples.map { $0.frames.prefix(5).map { $0.symbol ?? "?" } } })")
        // One issue for all samples: each one's problem, the first few shown.
        let failures = samples.compactMap { sample -> String? in
            let names = sample.frames.map { $0.symbol.map { String(Frame.standsFor($0)) } ?? "?" }
            let positions = Self.names.compactMap { name in names.firstIndex { $0.contains(name) } }
            let described = "\(sample.source): " + names.prefix(10).joined(separator: " ← ")
            guard positions.count == 4, positions == positions.sorted() else { return "order: \(described)" }
            guard sample.frames[positions[3]].isAsync else { return "not marked: \(described)" }
            guard sample.asyncChainEnd == .taskRoot else { return "end: \(described)" }
            guard !names.contains(where: { $0.contains("partial function") }) else { return "text: \(described)" }
            return nil
        }
        let allNamed = failures.isEmpty
        #expect(allNamed, "\(failures.count) of \(samples.count): \(failures.prefix(3))")
    }
}
