// A frame's verdict depends on its symbol and module, never on an earlier sample that had
// the same address (another process or trace).

import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct FrameCacheTests {
    @Test func sameAddressWithAnotherSymbolIsWorkedOutAgain() {
        let classifier = Classifier()
        let lock = Sample(
            time: 0,
            frames: [Frame(address: 0x7f00_0000_1000, symbol: "pthread_mutex_lock", module: Lib.libc)],
            state: .sleeping, syscall: 202)
        let write = Sample(
            time: 0, frames: [Frame(address: 0x7f00_0000_1000, symbol: "write", module: Lib.libc)],
            state: .running)
        for _ in 0..<3 {
            #expect(classifier.classify(lock).ruleName == "pthread-mutex")
            #expect(classifier.classify(write).ruleName == "io-wrapper-frame")
        }
    }

    @Test func copiesOfAClassifierAgree() async {
        let classifier = Classifier()
        let samples = [Fixture.compute, Fixture.nsLock, Fixture.sqliteBusy, Fixture.writeRunning]
        let expected = samples.map { classifier.classify($0) }
        await withTaskGroup(of: [Classification].self) { group in
            for _ in 0..<8 {
                group.addTask { samples.map { classifier.classify($0) } }
            }
            for await verdicts in group {
                #expect(verdicts == expected)
            }
        }
    }
}
