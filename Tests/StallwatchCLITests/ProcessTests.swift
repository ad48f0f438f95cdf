// The built `stallwatch` binary, run as a subprocess, exits 0/1/2 as the CLI contract says and `record` forwards its command's status.
import Foundation
import StallwatchTestSupport
import Testing

@Suite(.serialized) struct ProcessTests {
    let directory = TemporaryDirectory()

    @Test func binaryIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: BinaryRun.binary), "\(BinaryRun.binary)")
    }

    @Test func exitCodesEndToEnd() throws {
        let trace = directory.write("standard.swtrace", Fixture.standard())
        try expectExit(0, ["report", trace])
        try expectExit(0, ["gate", trace, "--max-stalls", "6"])
        try expectExit(1, ["gate", trace, "--max-stalls", "5"])
        try expectExit(2, ["gate", trace, "--max-stals", "5"])
        try expectExit(0, ["--help"])
        try expectExit(2, [])
        let missing = try runStallwatch(["report", directory.path + "/nope.swtrace"])
        #expect(missing.exitCode == 2, "\(missing)")
        #expect(
            missing.error == "Error: \(directory.path)/nope.swtrace: byte 0: cannot open (No such file or directory)\n")
        let garbage = directory.write("garbage.swtrace", Array(repeating: 0x41, count: 100))
        let bad = try runStallwatch(["report", garbage])
        #expect(bad.exitCode == 2, "\(bad)")
        #expect(bad.error.hasPrefix("Error: \(garbage): byte 0: "))
        #expect(bad.error.split(separator: "\n").count == 1)
    }

    @Test func recordSetsTheEnvironmentAndForwardsTheExitStatus() throws {
        let trace = directory.path + "/rec.swtrace"
        let run = try runStallwatch([
            "record", "-o", trace, "--budget", "8", "--mode", "full", "--",
            "/bin/sh", "-c", "echo \"$STALLWATCH_TRACE|$STALLWATCH_BUDGET_MS|$STALLWATCH_MODE\"; exit 3",
        ])
        #expect(run.exitCode == 3, "\(run)")
        #expect(run.output == "\(trace)|8|full\n", "\(run)")
        #expect(run.error.contains("wrote no trace"), "\(run)")
    }

    @Test func recordSaysWhenNoTraceWasWrittenAndKeepsTheStatus() throws {
        // With the preload library (built next to stallwatch; not used in a sanitizer build,
        // docs/sanitizers.md) the hint says what it watches; /bin/sh services no main queue, so it
        // leaves no trace either way.
        let plain = "(does it run MainLoop.main with Stallwatch linked in? libStallwatchPreload.so was not used)"
        let unpreloaded = directory.path + "/unpreloaded.swtrace"
        let bare = try runStallwatch(["record", "--no-preload", "-o", unpreloaded, "--", "/bin/sh", "-c", "exit 0"])
        #expect(bare.exitCode == 0, "\(bare)")
        #expect(bare.error == "warning: /bin/sh wrote no trace to \(unpreloaded) \(plain)\n")
        let preloaded = "(does it run MainLoop.main, dispatchMain() or RunLoop.main?)"
        let fresh = directory.path + "/never.swtrace"
        let none = try runStallwatch(["record", "-o", fresh, "--", "/bin/sh", "-c", "exit 4"])
        let preloads =
            ProcessInfo.processInfo.environment["STALLWATCH_PRELOAD", default: ""] != ""
            || (!Sanitizer.any
                && FileManager.default.isReadableFile(atPath: BinaryRun.productDirectory + "/libStallwatchPreload.so"))
        let hint = preloads ? preloaded : plain
        #expect(none.exitCode == 4, "\(none)")
        #expect(none.error == "warning: /bin/sh wrote no trace to \(fresh) \(hint)\n")
        // A recording left by an earlier run is replaced: removed before the command runs.
        let stale = directory.write("stale.swtrace", Fixture.standard())
        try FileManager.default.createDirectory(atPath: stale + ".d", withIntermediateDirectories: true)
        let staleChild = directory.write("stale.swtrace.d/app-1.swtrace", Fixture.standard())
        let old = try runStallwatch(["record", "-o", stale, "--", "/bin/sh", "-c", "exit 0"])
        #expect(old.exitCode == 0, "\(old)")
        #expect(old.error == "warning: /bin/sh wrote no trace to \(stale) \(hint)\n")
        #expect(!FileManager.default.fileExists(atPath: stale) && !FileManager.default.fileExists(atPath: staleChild))
        let written = try runStallwatch([
            "record", "-o", stale, "--", "/bin/sh", "-c", "printf x >> \"$STALLWATCH_TRACE\"",
        ])
        #expect(written.exitCode == 0, "\(written)")
        #expect(written.error.isEmpty, "\(written)")
    }

    @Test func versionIsOneLine() throws {
        let run = try runStallwatch(["--version"])
        #expect(run.exitCode == 0, "\(run)")
        #expect(run.output.wholeMatch(of: /stallwatch [0-9]+\.[0-9]+\.[0-9]+\n/) != nil, "\(run.output)")
    }

    @Test func recordReportsAKillingSignalAs128PlusItsNumber() throws {
        // SIGKILL, because the test runner may have SIGTERM ignored, which its children inherit.
        try expectExit(128 + 9, ["record", "-o", directory.path + "/t", "--", "/bin/sh", "-c", "kill -KILL $$"])
        try expectExit(127, ["record", "-o", directory.path + "/t", "--", directory.path + "/no-such-program"])
    }

    @Test func noColourWhenPiped() throws {
        let trace = directory.write("standard.swtrace", Fixture.standard())
        let run = try runStallwatch(["report", trace])
        #expect(run.exitCode == 0, "\(run)")
        #expect(!run.output.contains("\u{1B}["))
    }
}
