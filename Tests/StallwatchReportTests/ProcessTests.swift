// The built `stallwatch` binary, run as a subprocess, exits 0/1/2 as the CLI contract says and `record` forwards its command's status.
import Foundation
import Testing

/// The built `stallwatch` next to the test bundle, run with `arguments`.
struct BinaryRun {
    var exitCode: Int32
    var output: String
    var error: String

    static var binary: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // The test runner may sit inside an .xctest bundle directory.
        while directory.path != "/" && !FileManager.default.isExecutableFile(atPath: directory.path + "/stallwatch") {
            directory.deleteLastPathComponent()
        }
        return directory.path + "/stallwatch"
    }

    init(_ arguments: [String], environment: [String: String]? = nil) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BinaryRun.binary)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        exitCode = process.terminationStatus
        self.output = String(decoding: outputData, as: UTF8.self)
        self.error = String(decoding: errorData, as: UTF8.self)
    }
}

@Suite(.serialized) struct ProcessTests {
    let directory = TemporaryDirectory()

    @Test func binaryIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: BinaryRun.binary), "\(BinaryRun.binary)")
    }

    @Test func exitCodesEndToEnd() throws {
        let trace = directory.write("standard.swtrace", Fixture.standard())
        #expect(try BinaryRun(["report", trace]).exitCode == 0)
        #expect(try BinaryRun(["gate", trace, "--max-stalls", "6"]).exitCode == 0)
        #expect(try BinaryRun(["gate", trace, "--max-stalls", "5"]).exitCode == 1)
        #expect(try BinaryRun(["gate", trace, "--max-stals", "5"]).exitCode == 2)
        #expect(try BinaryRun(["--help"]).exitCode == 0)
        #expect(try BinaryRun([]).exitCode == 2)
        let missing = try BinaryRun(["report", directory.path + "/nope.swtrace"])
        #expect(missing.exitCode == 2)
        #expect(
            missing.error == "Error: \(directory.path)/nope.swtrace: byte 0: cannot open (No such file or directory)\n")
        let garbage = directory.write("garbage.swtrace", Array(repeating: 0x41, count: 100))
        let bad = try BinaryRun(["report", garbage])
        #expect(bad.exitCode == 2)
        #expect(bad.error.hasPrefix("Error: \(garbage): byte 0: "))
        #expect(bad.error.split(separator: "\n").count == 1)
    }

    @Test func recordSetsTheEnvironmentAndForwardsTheExitStatus() throws {
        let trace = directory.path + "/rec.swtrace"
        let run = try BinaryRun([
            "record", "-o", trace, "--budget", "8", "--mode", "full", "--",
            "/bin/sh", "-c", "echo \"$STALLWATCH_TRACE|$STALLWATCH_BUDGET_MS|$STALLWATCH_MODE\"; exit 3",
        ])
        #expect(run.exitCode == 3)
        #expect(run.output == "\(trace)|8|full\n")
        #expect(run.error.contains("wrote no trace"))
    }

    @Test func recordSaysWhenNoTraceWasWrittenAndKeepsTheStatus() throws {
        // With the preload library (next to stallwatch; not in sanitizer builds) the hint says
        // what it watches; /bin/sh services no main queue, so it leaves no trace either way.
        let plain = "(does it run MainLoop.main with Stallwatch linked in? libStallwatchPreload.so was not used)"
        let unpreloaded = directory.path + "/unpreloaded.swtrace"
        let bare = try BinaryRun(["record", "--no-preload", "-o", unpreloaded, "--", "/bin/sh", "-c", "exit 0"])
        #expect(bare.error == "warning: /bin/sh wrote no trace to \(unpreloaded) \(plain)\n")
        let preloaded = "(does it run MainLoop.main, dispatchMain() or RunLoop.main?)"
        let fresh = directory.path + "/never.swtrace"
        let none = try BinaryRun(["record", "-o", fresh, "--", "/bin/sh", "-c", "exit 4"])
        let hint = none.error.hasSuffix(plain + "\n") ? plain : preloaded
        #expect(none.exitCode == 4)
        #expect(none.error == "warning: /bin/sh wrote no trace to \(fresh) \(hint)\n")
        // A trace left by an earlier run is not this run's.
        let stale = directory.write("stale.swtrace", Fixture.standard())
        let old = try BinaryRun(["record", "-o", stale, "--", "/bin/sh", "-c", "exit 0"])
        #expect(old.exitCode == 0)
        #expect(
            old.error == "warning: /bin/sh wrote no trace to \(stale); the file there is from before this run \(hint)\n"
        )
        let written = try BinaryRun(["record", "-o", stale, "--", "/bin/sh", "-c", "printf x >> \"$STALLWATCH_TRACE\""])
        #expect(written.exitCode == 0)
        #expect(written.error.isEmpty)
    }

    @Test func versionIsOneLine() throws {
        let run = try BinaryRun(["--version"])
        #expect(run.exitCode == 0)
        #expect(run.output.wholeMatch(of: /stallwatch [0-9]+\.[0-9]+\.[0-9]+\n/) != nil)
    }

    @Test func recordReportsAKillingSignalAs128PlusItsNumber() throws {
        // SIGKILL, because the test runner may have SIGTERM ignored, which its children inherit.
        let run = try BinaryRun(["record", "-o", directory.path + "/t", "--", "/bin/sh", "-c", "kill -KILL $$"])
        #expect(run.exitCode == 128 + 9)
        let missing = try BinaryRun(["record", "-o", directory.path + "/t", "--", directory.path + "/no-such-program"])
        #expect(missing.exitCode == 127)
    }

    @Test func noColourWhenPiped() throws {
        let trace = directory.write("standard.swtrace", Fixture.standard())
        #expect(!(try BinaryRun(["report", trace]).output.contains("\u{1B}[")))
    }
}
