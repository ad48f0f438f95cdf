// The classifier's counter and wait conditions decide kernel time by what the kernel did
// for the thread, and a trace carries the counters and wait facts of each sample (kinds 18
// and 19) to the decoded stall, while a reader that does not know those kinds still reads
// the samples.
import Foundation
import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct KernelFactsTests {
    let classifier = Classifier()

    private func running(_ delta: KernelCounters?, wait: WaitFact? = nil) -> Sample {
        Sample(time: 0, state: .running, countersDelta: delta, wait: wait)
    }

    private func delta(_ values: [KernelCounter: UInt64]) -> KernelCounters {
        var result = KernelCounters()
        for (counter, value) in values { result[counter] = value }
        return result
    }

    @Test func systemTimeWithBytesReadIsIORead() {
        let verdict = classifier.classify(running(delta([.systemTime: 10_000_000, .readBytes: 8 << 20])))
        #expect(verdict == Classification(category: .io, reason: "read", ruleName: "kernel-read"))
    }

    @Test func systemTimeWithPagesDirtiedIsIOWrite() {
        let verdict = classifier.classify(running(delta([.systemTime: 10_000_000, .writeBytes: 2 << 20])))
        #expect(verdict == Classification(category: .io, reason: "write", ruleName: "kernel-write"))
    }

    @Test func majorFaultsAreIOPageFault() {
        let verdict = classifier.classify(running(delta([.userTime: 10_000_000, .majorFaults: 3])))
        #expect(verdict == Classification(category: .io, reason: "page fault", ruleName: "major-fault"))
    }

    @Test func userTimeIsComputeEvenWithBytesMoving() {
        let verdict = classifier.classify(running(delta([.userTime: 20_000_000, .readBytes: 4096])))
        #expect(verdict.category == .compute)
        #expect(verdict.ruleName == "running")
    }

    @Test func withoutADeltaRunningIsCompute() {
        #expect(classifier.classify(running(nil)).ruleName == "running")
    }

    @Test func stillInsideAFileSyscallIsIOWithItsOperation() {
        let wait = WaitFact(kind: .file, operation: "pread64", fd: 7, target: "/data/a")
        let verdict = classifier.classify(running(delta([:]), wait: wait))
        #expect(verdict == Classification(category: .io, reason: "pread64", ruleName: "in-io-syscall"))
    }

    @Test func rulesFilesUseTheNewConditions() throws {
        let rules = try Classifier.decodeRules(
            json: #"""
                {"version": 1, "rules": [
                  {"name": "swap-in", "category": "io", "reason": "swap",
                   "match": {"cpu": "system", "minDelta": {"majorFaults": 10}, "syscall": "none"}},
                  {"name": "db-wait", "category": "database", "reasonFrom": "wait", "match": {"wait": "database"}}
                ]}
                """#, source: "test.json")
        #expect(rules[0].match.cpu == .system && rules[0].match.minDelta == [.majorFaults: 10])
        #expect(rules[0].level == .state)
        let custom = Classifier(rules: rules + Classifier.builtinRules)
        var sample = Sample(time: 0, state: .diskSleep, syscall: -1, countersDelta: delta([.majorFaults: 12]))
        #expect(custom.classify(sample).ruleName == "swap-in")
        sample.countersDelta = delta([.majorFaults: 2])
        #expect(custom.classify(sample).ruleName == "major-fault")
        let db = running(nil, wait: WaitFact(kind: .database, statement: "SELECT 1"))
        #expect(custom.classify(db) == Classification(category: .database, reason: "database", ruleName: "db-wait"))
        // And they survive a round trip through the rules-file form.
        let encoded = try JSONEncoderForTests.encode(rules)
        #expect(try Classifier.decodeRules(json: encoded, source: "again") == rules)
    }

    @Test func aRunnableThreadKeptOffACPUIsWaitingNotComputing() {
        let classifier = Classifier()
        let app = Frame(address: 0x5610_4a41_2340, symbol: "FeedApp.Feed.layout() -> ()", module: "/srv/feed/FeedApp")
        var sample = running(nil, wait: WaitFact(kind: .cpu))
        sample.frames = [app]
        #expect(
            classifier.classify(sample)
                == Classification(category: .other, reason: "waiting for a CPU", ruleName: "cpu-wait"))
        // In a syscall too: the thread waits for a CPU, not for the call.
        sample.syscall = SyscallTable.number(for: "read")
        #expect(classifier.classify(sample).ruleName == "cpu-wait")
        // Without the fact it is the app's code running.
        sample.wait = nil
        sample.syscall = nil
        #expect(classifier.classify(sample).category == .compute)
        #expect(WaitFact(kind: .cpu).summary == "a CPU (runnable, kept off one by other threads)")
    }

    @Test(arguments: [
        (#"{"cpu": "kernel"}"#, "unknown cpu 'kernel'"),
        (#"{"minDelta": {"majflt": 1}}"#, "unknown counter 'majflt'"),
        (#"{"minDelta": {"majorFaults": 0}}"#, "'majorFaults' must be a whole number from 1 to"),
        (#"{"wait": "lock"}"#, "unknown wait kind 'lock'"),
    ])
    func badConditionsAreNamed(match: String, message: String) {
        let json = #"{"version": 1, "rules": [{"name": "x", "category": "io", "match": \#(match)}]}"#
        do {
            _ = try Classifier.decodeRules(json: json, source: "bad.json")
            Issue.record("\(match) was accepted")
        } catch {
            #expect(error.description.contains(message), "\(error.description)")
        }
    }

    /// A stall with one sample, its counters and its wait fact, and the owner's symbol.
    private func trace(factKinds: (UInt8, UInt8)? = nil) -> [UInt8] {
        var encoder = TraceEncoder()
        var bytes = TraceEncoder.preamble
        let records: [TraceRecord] = [
            .stallBegan(.init(id: 1, start: 1_000, site: 1, mode: 1, phase: .beforeSources, tier: .hitch)),
            .sample(.init(stall: 1, index: 0, time: 20_000_000, state: .sleeping, syscall: 202)),
            .sampleCounters(
                .init(
                    stall: 1, sample: 0, counters: KernelCounters(values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
                    delta: KernelCounters(values: [0, 0, 0, 1]))),
            .symbol(.init(address: 0x1000, name: "MyApp.Cache.refresh() -> ()")),
            .sampleWait(
                .init(
                    stall: 1, sample: 0, kind: .mutex, operation: "futex", address: 0x7000, ownerTID: 4711,
                    ownerName: "cache-refresh", ownerFrames: [0x1000])),
            .stallEnded(.init(id: 1, end: 60_000_000)),
        ]
        for record in records {
            let start = bytes.count
            encoder.append(record, to: &bytes)
            // Pretend to be an old reader: give the new kinds ids it does not know.
            if let (counters, wait) = factKinds {
                if record.kind == .sampleCounters { bytes[start] = counters }
                if record.kind == .sampleWait { bytes[start] = wait }
            }
        }
        return bytes
    }

    @Test func decodedSamplesCarryTheirFacts() throws {
        let decoded = DecodedTrace(decoding: trace())
        let sample = try #require(decoded.stalls.first?.samples.first)
        #expect(sample.counters?.majorFaults == 4 && sample.countersDelta?.majorFaults == 1)
        let wait = try #require(sample.wait)
        #expect(wait.owner?.tid == 4711 && wait.owner?.name == "cache-refresh")
        #expect(wait.owner?.frames.first?.symbol == "MyApp.Cache.refresh() -> ()")
        #expect(wait.summary == "lock held by thread 4711 'cache-refresh' in `Cache.refresh()`")
    }

    @Test func aReaderThatDoesNotKnowTheKindsStillReadsTheSample() throws {
        let decoded = DecodedTrace(decoding: trace(factKinds: (120, 121)))
        #expect(decoded.outcome.unknownRecordCount == 2)
        let sample = try #require(decoded.stalls.first?.samples.first)
        #expect(sample.syscall == 202 && sample.counters == nil && sample.wait == nil)
    }

    @Test func summariesReadAsSentences() {
        #expect(WaitFact(kind: .file, operation: "pread64", target: "/a/b").summary == "read of /a/b")
        #expect(
            WaitFact(kind: .socket, operation: "recvfrom", target: "127.0.0.1:5432").summary
                == "recv from 127.0.0.1:5432")
        #expect(WaitFact(kind: .socket, operation: "sendto", target: "/run/x.sock").summary == "send to /run/x.sock")
        #expect(WaitFact(kind: .pageFault, target: "/data/index").summary == "page fault in /data/index")
        #expect(
            WaitFact(kind: .database, target: "/d.sqlite", statement: "SELECT *\n  FROM feed").summary
                == "SQL `SELECT * FROM feed` on /d.sqlite")
    }
}

enum JSONEncoderForTests {
    static func encode(_ rules: [ClassificationRule]) throws -> String {
        struct File: Encodable {
            var version = 1
            var rules: [ClassificationRule]
        }
        return String(decoding: try JSONEncoder().encode(File(rules: rules)), as: UTF8.self)
    }
}
