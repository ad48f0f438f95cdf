// A program that never heard of Stallwatch, recorded with `stallwatch record`: a @MainActor
// request handler awaits a service that awaits a repository that computes on the main queue
// (dispatchMain); the stall's samples name all four, innermost first, the callers marked async.
import Foundation
import StallwatchCore
import Testing

@Suite struct AsyncChainRecordTests {
    static let names = ["crunchNumbers", "Requests.repository", "Requests.service", "Requests.handle"]

    @Test(
        .timeLimit(.minutes(1)),
        .disabled(
            if: Sanitizer.address || Sanitizer.thread,
            "a sanitizer runtime must be the first library loaded; LD_PRELOAD puts ours before it"))
    func anUnmodifiedProgramsAsyncStallIsRecordedWithItsAwaitingCallers() throws {
        let path = NSTemporaryDirectory() + "async-record-\(UUID().uuidString).swtrace"
        defer { unlink(path) }
        // A 40 ms budget and a 150 ms culprit, as HeartbeatSampleTests (a loaded machine).
        let run = try runProduct(
            "stallwatch",
            [
                "record", "-o", path, "--budget", "40", "--", builtProduct("DispatchMainApp"), "--async", "--stall-ms",
                "150",
            ])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.contains("in async code"), "\(run.output)")
        let trace = DecodedTrace(decoding: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), fileName: path)
        let samples = trace.stalls.flatMap(\.samples).filter { sample in
            sample.frames.contains { $0.symbol?.contains(Self.names[0]) == true }
        }
        #expect(!samples.isEmpty, "\(trace.stalls.map { "\($0.callout.label ?? "-"): \($0.samples.count)" })")
        let failures = samples.compactMap { sample -> String? in
            let names = sample.frames.map { $0.symbol.map { String(Frame.standsFor($0)) } ?? "?" }
            let positions = Self.names.compactMap { name in names.firstIndex { $0.contains(name) } }
            let described = "\(sample.source): " + names.prefix(10).joined(separator: " ← ")
            guard positions.count == 4, positions == positions.sorted() else { return "order: \(described)" }
            guard sample.frames[positions[2]].isAsync, sample.frames[positions[3]].isAsync else {
                return "not marked: \(described)"
            }
            return sample.asyncChainEnd == .taskRoot ? nil : "end: \(described)"
        }
        let allNamed = failures.isEmpty
        #expect(allNamed, "\(failures.count) of \(samples.count): \(failures.prefix(3))")
    }
}
