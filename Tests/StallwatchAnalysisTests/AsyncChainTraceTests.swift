// A sample's awaiting callers survive the trace: a `sampleAsyncChain` record after a sample marks
// its frames from `firstAsync` on as async and says how the chain ended; a sample with the same
// addresses and no such record stays unmarked, and readers without the kind see plain frames.

import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct AsyncChainTraceTests {
    static let base: UInt64 = 0x5610_4a40_0000
    /// The blocking call, the repository's partial function, then the service and the handler.
    static let addresses: [UInt64] = [base + 0x100, base + 0x200, base + 0x300, base + 0x400]

    static func records(marked: Bool) -> [TraceRecord] {
        var records: [TraceRecord] = [
            .header(TraceFixture.header),
            .module(.init(index: 1, loadAddress: base, path: "/srv/App", buildID: [1, 2])),
            .stallBegan(.init(id: 1, start: 1_000_000_000, site: 0, mode: 0, phase: .beforeTimers, tier: .hitch)),
            .sample(
                .init(
                    stall: 1, index: 0, time: 1_010_000_000, state: .running, cpuTime: 5, annotation: 0,
                    frames: addresses)),
        ]
        if marked {
            records.append(.sampleAsyncChain(.init(stall: 1, sample: 0, firstAsync: 2, end: .taskRoot)))
        }
        records.append(
            .sample(
                .init(
                    stall: 1, index: 1, time: 1_020_000_000, state: .running, cpuTime: 6, annotation: 0,
                    frames: addresses))
        )
        let names = [
            "App.loadRows()", "(1) suspend resume partial function for App.Repository.rows() async -> Swift.Int",
            "(2) await resume partial function for App.Service.fetch() async -> Swift.Int",
            "(2) await resume partial function for App.Handler.handle() async -> Swift.Int",
        ]
        for (address, name) in zip(addresses, names) {
            records.append(.symbol(.init(address: address, module: 1, name: name, file: nil, line: nil)))
        }
        records.append(.stallEnded(.init(id: 1, end: 1_100_000_000, flags: [])))
        return records
    }

    @Test func aSampleAsyncChainRecordMarksTheSamplesAwaitingCallers() throws {
        let trace = DecodedTrace(decoding: TraceFixture.encode(Self.records(marked: true)))
        #expect(trace.outcome.endedCleanly)
        let samples = try #require(trace.stalls.first?.samples)
        #expect(samples.count == 2)
        #expect(samples[0].frames.map(\.isAsync) == [false, false, true, true])
        #expect(samples[0].asyncChainEnd == .taskRoot)
        #expect(samples[0].frames.map(\.address) == Self.addresses)
        #expect(samples[0].frames[2].symbol?.hasSuffix("App.Service.fetch() async -> Swift.Int") == true)
        // The next sample has the same addresses and no record of its own.
        #expect(samples[1].frames.map(\.isAsync) == [false, false, false, false])
        #expect(samples[1].asyncChainEnd == nil)
    }

    @Test func aTraceWithoutTheKindReadsThePlainFrames() throws {
        let trace = DecodedTrace(decoding: TraceFixture.encode(Self.records(marked: false)))
        let samples = try #require(trace.stalls.first?.samples)
        #expect(samples[0].frames.map(\.address) == Self.addresses)
        #expect(samples.allSatisfy { $0.asyncChainEnd == nil && !$0.frames.contains(where: \.isAsync) })
    }

    @Test func aFrameEncodesItsAsyncMarkOnlyWhenSet() throws {
        let plain = Frame(address: 1, symbol: "f")
        let awaiting = Frame(address: 2, symbol: "g", isAsync: true)
        #expect(Frame.isAsyncFunction("(2) await resume partial function for App.f() async -> ()"))
        #expect(Frame.isAsyncFunction("App.f() async throws -> Swift.Int"))
        #expect(!Frame.isAsyncFunction("App.f() -> ()"))
        #expect(Frame.isAsyncFunction("partial apply forwarder for thunk with unmangled suffix \".68TQ0_\""))
        #expect(Frame.isAsyncFunction("f with unmangled suffix \"TY12_\""))
        #expect(!Frame.isAsyncFunction("f with unmangled suffix \".68TZ0_\""))
        #expect(plain.isAsync == false && awaiting.isAsync)
    }
}
