// A program that never heard of Stallwatch, recorded with `stallwatch record`: a @MainActor
// request handler awaits a service that awaits a repository that computes on the main queue
// (dispatchMain); the stall's samples name all four, innermost first, the callers marked async.
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
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
        #expect(run.exitCode == 0, "\(run.error)")
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

/// The toolchain's language server, recorded unmodified over an LSP session: its requests run
/// as tasks on the cooperative pool, and a stall in the code a request awaits names, read from
/// the async context chain, the request handler that awaited it (docs/async.md). In the same
/// suite as the other sourcekit-lsp recordings, so they run one at a time.
extension PoolPreloadTests {
    /// The request handler every LSP request's task awaits through,
    /// `SourceKitLSPServer.handle(request:id:reply:)`, as `Frame.standsFor` names its resume
    /// functions: `SourceKitLSP.SourceKitLSPServer.handle<A where A: …RequestType>(request: A, id: …`.
    static func isRequestHandler(_ function: Substring) -> Bool {
        function.hasPrefix("SourceKitLSP.SourceKitLSPServer.handle<") && function.contains(">(request: A, id: ")
    }

    @Test(.timeLimit(.minutes(2)))
    func sourceKitLSPsStallChainsReachItsRequestHandler() throws {
        // sourcekit-lsp's requests are short, and a pool stall is a heartbeat task that waited
        // past the budget to start (every pool thread busy): so the budget is 0.1 ms and the
        // session 60 rounds of four requests (about 22 s). How many stalls reach the handler
        // varies widely with the machine's load: on a busy 2-core machine most stalls are pool
        // threads waiting to be scheduled, their samples empty or idle. The long session keeps
        // enough that do for the check to hold on a loaded machine too.
        let session = try LSPSession(rounds: 60, options: ["--budget", "0.1"])
        defer { session.remove() }
        let path = session.trace
        // The recording: the trace, and one per process sourcekit-lsp started (none in a
        // one-file workspace without a package, but each is read if there is one).
        let children = (try? FileManager.default.contentsOfDirectory(atPath: path + ".d")) ?? []
        let files = [path] + children.filter { $0.hasSuffix(".swtrace") }.map { path + ".d/" + $0 }
        let stalls = try files.flatMap { file in
            DecodedTrace(decoding: [UInt8](try Data(contentsOf: URL(fileURLWithPath: file))), fileName: file).stalls
        }
        // Each sample's awaiting callers: its frames read from the chain (`isAsync`), by function.
        let chains = stalls.flatMap(\.samples).map { sample in
            sample.frames.filter(\.isAsync).compactMap { $0.symbol.map(Frame.standsFor) }
        }
        let reaching = chains.filter { $0.contains(where: Self.isRequestHandler) }
        #expect(
            !reaching.isEmpty,
            """
            \(stalls.count) stalls, \(chains.count) samples, \(chains.filter { !$0.isEmpty }.count) with awaiting \
            callers, none reaching SourceKitLSPServer.handle(request:id:reply:): \
            \(chains.filter { !$0.isEmpty }.prefix(5).map { $0.map { $0.prefix(80) } })
            """)
    }
}
