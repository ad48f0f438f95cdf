// Files and streams a careless or hostile user names: an output over an input, endless or
// foreign standard input, a FIFO, odd directory entries, an empty file, a repeated option, a
// zero budget. None may change an exit status, hang, lose a file or print what the trace did not
// say (docs/cli.md, "Inputs and exit codes").
import Foundation
import StallwatchCLITestSupport
import StallwatchTestSupport
import Testing

@Suite struct FileAndStreamInputTests {
    @Test(arguments: [
        ["export", "T", "--format", "folded", "-o", "T"], ["report", "T", "--html", "T"],
        ["gate", "T", "--max-stalls", "100", "--junit", "T"],
        ["gate", "U", "--baseline", "T", "--max-regression", "10", "--junit", "T"],
    ])
    func anOutputOverAnInputIsRefusedAndTheInputKept(arguments: [String]) throws {
        let directory = TemporaryDirectory()
        let original = Fixture.standard()
        let path = directory.write("t.swtrace", original)
        let other = directory.write("u.swtrace", original)
        // The same file spelled another way counts as the same file.
        let spelled = directory.path + "/./t.swtrace"
        let run = CLIRun(
            arguments.enumerated().map { index, argument in
                argument == "T" ? (index == 1 ? path : spelled) : argument == "U" ? other : argument
            })
        #expect(run.exitCode == 2, "\(run.output)")
        #expect(run.error.contains("is the input") && run.error.contains("refusing to overwrite it"), "\(run.error)")
        #expect(FileManager.default.contents(atPath: path).map(Array.init) == original)
    }

    @Test func endlessForeignStandardInputFailsAtOnce() throws {
        // `yes` never ends: the preamble check must stop reading, not buffer all of it. The
        // timeout only bounds a regression (it would otherwise read until memory runs out).
        let run = try ChildRun("/bin/sh", ["-c", "yes | timeout 20 \"$0\" report -", BinaryRun.binary])
        #expect(run.exitCode == 2, "\(run)")
        #expect(run.error.hasPrefix("Error: -: byte 0: "), "\(run)")
    }

    @Test func standardInputIsReadOnceForEveryDash() throws {
        let directory = TemporaryDirectory()
        let path = directory.write("t.swtrace", Fixture.standard())
        let run = try ChildRun("/bin/sh", ["-c", "\"$0\" diff - - < \"$1\"", BinaryRun.binary, path])
        #expect(run.exitCode == 0, "\(run)")
        #expect(run.output.contains("Signature diff"), "\(run.output)")
    }

    @Test func aFIFOIsRefusedNotWaitedOn() throws {
        let directory = TemporaryDirectory()
        let fifo = directory.path + "/p.swtrace"
        #expect(mkfifo(fifo, 0o600) == 0)
        // With no writer, opening the FIFO to read would block for ever: the timeout turns
        // a regression into exit 124 rather than a hung suite.
        let run = try ChildRun("/usr/bin/timeout", ["20", BinaryRun.binary, "report", fifo])
        #expect(run.exitCode == 2, "\(run)")
        #expect(run.error.contains("\(fifo): byte 0: not a regular file (a FIFO)"), "\(run)")
        let folder = directory.path + "/d.swtrace"
        try FileManager.default.createDirectory(atPath: folder + "/inner", withIntermediateDirectories: true)
        let named = CLIRun(["show", folder + "/inner"])
        #expect(named.exitCode == 2, "\(named.error)")
    }

    @Test func oddEntriesOfADirectoryAreListedAsUnreadable() throws {
        let directory = TemporaryDirectory()
        _ = directory.write("good.swtrace", Fixture.standard())
        try FileManager.default.createDirectory(
            atPath: directory.path + "/folder.swtrace", withIntermediateDirectories: false)
        #expect(symlink(directory.path + "/missing", directory.path + "/dangling.swtrace") == 0)
        #expect(symlink(directory.path + "/loop.swtrace", directory.path + "/loop.swtrace") == 0)
        #expect(mkfifo(directory.path + "/pipe.swtrace", 0o600) == 0)
        // A link back up the tree: walked once, not for ever.
        #expect(symlink(directory.path, directory.path + "/up") == 0)
        let run = CLIRun(["report", directory.path])
        #expect(run.exitCode == 2, "\(run.error)")
        for name in ["folder", "dangling", "loop", "pipe"] {
            #expect(run.output.contains("\(name).swtrace") || run.error.contains("\(name).swtrace"), "\(name)")
        }
        #expect(run.output.contains("Stalls: 6,"), "\(run.output)")
    }

    @Test func emptyInputSaysEmpty() {
        let directory = TemporaryDirectory()
        let path = directory.write("empty.swtrace", [])
        let run = CLIRun(["report", path])
        #expect(run.exitCode == 2)
        #expect(run.error.hasPrefix("Error: \(path): byte 0: empty, not a trace"), "\(run.error)")
    }

    @Test(arguments: [
        ["gate", "-", "--max-stalls", "1", "--max-stalls", "100"], ["report", "-", "--top", "1", "--top", "3"],
    ])
    func aRepeatedOptionIsRefused(arguments: [String]) {
        let run = CLIRun(arguments, input: Fixture.standard())
        #expect(run.exitCode == 2)
        #expect(run.error.contains("is given twice"), "\(run.error)")
        #expect(run.output.isEmpty)
    }

    @Test func aZeroBudgetSaysWhatItWants() {
        let run = CLIRun(["record", "-o", "-", "--budget", "0", "--", "true"])
        #expect(run.exitCode == 2)
        #expect(run.error.contains("above 0"), "\(run.error)")
    }
}
