// The data model's raw values are stable, /proc letters map to states, frames know whether
// they are system code, and values survive Codable.

import Foundation
import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct DataModelTests {
    /// A negative duration is 0 nanoseconds, whichever part carries the sign: -500 ms is 0 s
    /// and negative attoseconds, the form a deadline that passed less than a second ago takes
    /// in `MainLoop.run(mode:until:)`.
    @Test func durationsInNanosecondsAreNeverNegativeAndSaturate() {
        #expect(Duration.milliseconds(-500).nanoseconds == 0)
        #expect(Duration.seconds(-3).nanoseconds == 0)
        #expect(Duration.milliseconds(1_500).nanoseconds == 1_500_000_000)
        #expect(Duration.seconds(Int64.max).nanoseconds == .max)
    }

    @Test func procLettersMapToStates() {
        let expected: [Character: ThreadState] = [
            "R": .running, "S": .sleeping, "D": .diskSleep, "T": .stopped, "t": .stopped,
            "Z": .zombie, "X": .zombie, "I": .idle, "W": .unknown, "?": .unknown,
        ]
        for (letter, state) in expected {
            #expect(ThreadState(procCode: letter) == state, "\(letter)")
        }
        for state in ThreadState.allCases where state != .unknown {
            #expect(ThreadState(procCode: state.procCode) == state)
        }
    }

    @Test func rawValuesAreStable() {
        #expect(LoopActivity.allCases.map(\.rawValue) == [1, 2, 3, 4, 5, 6])
        #expect(CalloutKind.allCases.map(\.rawValue) == [1, 2, 3, 4, 5])
        #expect(ThreadState.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6])
        #expect(
            StallCategory.allCases.map(\.rawValue) == ["compute", "io", "lockWait", "database", "other"])
        #expect(StallFlags.unfinished.rawValue == 1)
        #expect(StallFlags.suspended.rawValue == 2)
        #expect(StallFlags.captureTimedOut.rawValue == 4)
    }

    @Test(arguments: [
        ("/usr/lib/x86_64-linux-gnu/libc.so.6", true),
        ("/lib/x86_64-linux-gnu/libc.so.6", true),
        ("/usr/lib/x86_64-linux-gnu/libsqlite3.so.0", true),
        ("/opt/swift/usr/lib/swift/linux/libswiftCore.so", true),
        ("/opt/swift/usr/lib/swift/linux/libFoundation.so", true),
        ("/home/ci/toolchain/libdispatch.so", true),
        ("[vdso]", true),
        ("linux-vdso.so.1", true),
        // Stallwatch's preload library, in a program `stallwatch record` runs.
        ("/work/stallwatch/.build/release/libStallwatchPreload.so", true),
        // And the shim that loads it (its interposed waits are in every loop's stack).
        ("/work/stallwatch/.build/release/libStallwatchPreloadShim.so", true),
        ("/srv/feed/.build/release/FeedApp", false),
        ("/srv/feed/.build/release/libMyORM.so", false),
    ])
    func systemFrames(module: String, isSystem: Bool) {
        #expect(Frame(address: 0x1000, symbol: "f", module: module).isSystem == isSystem)
    }

    /// The byte search behind the module tests: first match, at either end, none, and a needle
    /// longer than the text; multi-byte characters count in UTF-8 bytes.
    @Test func byteSearchFindsTheFirstOccurrence() {
        #expect("/opt/lib/swift/x/lib/swift/".utf8Offset(of: "/lib/swift/") == 4)
        #expect("/lib/swift/".utf8Offset(of: "/lib/swift/") == 0)
        #expect("a/.build/".utf8Offset(of: "/.build/") == 1)
        #expect("/srv/app/.buil".utf8Offset(of: "/.build/") == nil)
        #expect("/b".utf8Offset(of: "/.build/") == nil)
        #expect("é/lib/swift/".utf8Offset(of: "/lib/swift/") == 2)
        #expect("anything".utf8Offset(of: "") == 0)
    }

    @Test func unknownModuleIsSystem() {
        #expect(Frame(address: 0x1000).isSystem)
    }

    @Test func sampleNamesItsSyscall() {
        #expect(Fixture.fsyncTimedOut.syscallName == "fsync")
        #expect(Fixture.compute.syscallName == nil)
        #expect(Sample(time: 0, state: .diskSleep, syscall: -1).syscallName == nil)
    }

    @Test func stallDuration() {
        let callout = CalloutIdentity(
            kind: .timer, label: "refresh", file: "FeedApp/Timers.swift", line: 9, phase: .beforeTimers)
        var stall = Stall(id: 1, start: 5 * ms, end: 305 * ms, tier: .hang, callout: callout)
        #expect(stall.duration == .milliseconds(300))
        stall.end = nil
        #expect(stall.duration == nil)
    }

    @Test func stallSurvivesJSON() throws {
        let stall = Stall(
            id: 3, start: 1_000, end: 400 * ms, tier: .hang,
            callout: CalloutIdentity(
                kind: .mainQueue, file: "FeedApp/Feed.swift", line: 12, mode: "tracking",
                phase: .afterWaiting),
            samples: [Fixture.nsLock, Fixture.fsyncTimedOut, Fixture.compute],
            flags: [.captureTimedOut])
        let data = try JSONEncoder().encode(stall)
        #expect(try JSONDecoder().decode(Stall.self, from: data) == stall)
        let breakdown = Classifier().breakdown(of: stall)
        let decoded = try JSONDecoder().decode(
            StallBreakdown.self, from: JSONEncoder().encode(breakdown))
        #expect(decoded == breakdown)
        let text = String(decoding: try JSONEncoder().encode(breakdown), as: UTF8.self)
        #expect(text.contains("\"lockWait\""))
    }
}
