// `stallwatch record` never changes how its command dies: a crash signal is forwarded as 128+N with
// the program's own crash output only, and a program that forks or crashes does not hang.
import Foundation
import StallwatchTestSupport
import Testing

/// What the tests need outside the package: the C compiler, libdispatch, Python, bash.
private enum CrashTools {
    /// `cc` on PATH, for the C programs these tests compile.
    static let cc: String? = onPath("cc")
    /// `python3` on PATH: what `record -- python3 …` runs (a pyenv shim, if that comes first).
    static let python3: String? = onPath("python3")
    static let bash: String? = FileManager.default.isExecutableFile(atPath: "/bin/bash") ? "/bin/bash" : nil

    /// The directory of the libdispatch.so this test process runs with (Foundation links it).
    static let dispatchDirectory: String? = {
        // Read to the end: /proc files have no size for String(contentsOfFile:) to go by.
        guard let maps = FileHandle(forReadingAtPath: "/proc/self/maps")?.readDataToEndOfFile() else { return nil }
        let path = String(decoding: maps, as: UTF8.self).split(separator: "\n")
            .compactMap { line in line.split(separator: " ").last }.first { $0.hasSuffix("/libdispatch.so") }
        return path.map { String($0.dropLast("/libdispatch.so".count)) }
    }()

    private static func onPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH", default: "/usr/bin:/bin"]
        return path.split(separator: ":").map { "\($0)/\(name)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }
}

/// What the Swift runtime's crash handler (SWIFT_BACKTRACE) prints; none of it may appear for a
/// program that is not a Swift program.
private let swiftCrashReportMarkers = ["Program crashed", "Backtracing", "swift-runtime:", "Thread 0"]

@Suite(.serialized) struct RecordCrashTests {
    let directory = TemporaryDirectory()

    /// Whether `record` preloads its library here (not in a sanitizer build: docs/sanitizers.md).
    static let preloads =
        ProcessInfo.processInfo.environment["STALLWATCH_PRELOAD", default: ""] != ""
        || (!Sanitizer.any
            && FileManager.default.isReadableFile(atPath: BinaryRun.productDirectory + "/libStallwatchPreload.so"))

    /// `stallwatch record [--no-preload] -o trace -- command…`, killed if it is still running after
    /// a minute (a hang fails the test instead of blocking the suite).
    private func record(
        _ command: [String], trace: String, preload: Bool = true, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> ChildRun {
        let options = preload ? ["record", "-o", trace] : ["record", "--no-preload", "-o", trace]
        return try withCrashSignalsUnblocked {
            try ChildRun(
                BinaryRun.binary, options + ["--"] + command, timeout: .seconds(60), sourceLocation: sourceLocation)
        }
    }

    /// Runs `body` with the crash signals unblocked on this thread, as they are in a shell. Tests
    /// run on libdispatch worker threads, which block every signal but the synchronous ones
    /// (SIGABRT and SIGQUIT among them), and a child inherits the mask of the thread that spawns
    /// it: a shell that sent itself SIGABRT from there would exit 0, with or without Stallwatch.
    private func withCrashSignalsUnblocked<T>(_ body: () throws -> T) rethrows -> T {
        var crashSignals = sigset_t()
        sigemptyset(&crashSignals)
        for signal in Self.crashSignals { sigaddset(&crashSignals, signal.number) }
        var previous = sigset_t()
        pthread_sigmask(SIG_UNBLOCK, &crashSignals, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        return try body()
    }

    /// Expects `run`'s standard error to hold no Swift crash report and, apart from lines
    /// starting with one of `allowed`, nothing at all.
    private func expectOnlyOwnOutput(
        _ run: ChildRun, allowing allowed: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for marker in swiftCrashReportMarkers {
            #expect(!run.error.contains(marker), "a Swift crash report: \(run)", sourceLocation: sourceLocation)
        }
        let others = run.error.split(separator: "\n").filter { line in !allowed.contains { line.hasPrefix($0) } }
        #expect(others.isEmpty, "unexpected lines on stderr: \(run)", sourceLocation: sourceLocation)
    }

    /// Compiles `source` with `cc` (and `flags`) into the temporary directory.
    private func compile(_ source: String, named name: String, flags: [String] = []) throws -> String {
        let cc = try #require(CrashTools.cc)
        let file = directory.write(name + ".c", Array(source.utf8))
        let executable = directory.path + "/" + name
        let build = try ChildRun(cc, ["-o", executable, file] + flags, timeout: .seconds(120))
        try #require(build.exitCode == 0, "cc failed: \(build)")
        return executable
    }

    /// The signals the Swift runtime's backtracer takes when it loads (CrashHandlerLinux.cpp).
    static let crashSignals: [(name: String, number: Int32)] = [
        ("SEGV", SIGSEGV), ("ABRT", SIGABRT), ("BUS", SIGBUS), ("ILL", SIGILL), ("FPE", SIGFPE),
        ("QUIT", SIGQUIT), ("TRAP", SIGTRAP),
    ]

    /// Every preloaded process that never ran its main queue printed a two-line warning into its
    /// own stderr (34 of them in a 112-line `swift build` log): what Stallwatch says now goes to
    /// record's stderr at the end, each line `stallwatch:`, naming the process.
    @Test(.enabled(if: RecordCrashTests.preloads, "the preload library is not built here"))
    func theProgramsOwnStandardErrorIsItsOwn() throws {
        let childErrors = directory.path + "/child.err"
        let run = try withCrashSignalsUnblocked {
            try ChildRun(
                BinaryRun.binary,
                [
                    "record", "-o", directory.path + "/quiet.swtrace", "--", "/bin/sh", "-c",
                    "exec 2>\(childErrors); sleep 1; echo out",
                ], environment: ProcessInfo.processInfo.environment.merging(["STALLWATCH_UNSERVICED_MS": "100"]) { $1 },
                timeout: .seconds(60))
        }
        #expect(run.exitCode == 0, "\(run)")
        #expect(run.output == "out\n")
        #expect((try? String(contentsOfFile: childErrors, encoding: .utf8)) == "", "the program's stderr")
        let said = run.error.split(separator: "\n").filter { !$0.hasPrefix("warning: /bin/sh wrote no trace") }
        #expect(!said.isEmpty && said.allSatisfy { $0.hasPrefix("stallwatch: ") }, "\(run.error)")
        #expect(said.contains { $0.hasPrefix("stallwatch: sh (pid ") }, "\(run.error)")
    }

    /// `-o` into a missing directory ran the program anyway (exit 0) and then said it could not
    /// write: now nothing runs, exit 2, one line naming the path.
    @Test func aTraceThatCannotBeWrittenStopsBeforeTheCommandRuns() throws {
        let marker = directory.path + "/ran"
        let trace = directory.path + "/missing/t.swtrace"
        let run = try record(["/usr/bin/touch", marker], trace: trace)
        #expect(run.exitCode == 2, "\(run)")
        #expect(
            run.error == "Error: cannot write the trace \(trace): there is no directory \(directory.path)/missing\n")
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    /// SIGTERM to `record` left the program running, re-parented to init: now each of the
    /// signals that ask a process to end is passed on, and record exits with its status.
    @Test(arguments: [("TERM", SIGTERM), ("HUP", SIGHUP), ("INT", SIGINT), ("USR1", SIGUSR1)])
    func aSignalToRecordReachesTheCommand(name: String, number: Int32) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BinaryRun.binary)
        process.arguments = [
            "record", "--no-preload", "-o", directory.path + "/\(name).swtrace", "--", "/bin/sh", "-c",
            "echo $$; exec sleep 60",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = Pipe()
        try withCrashSignalsUnblocked { try process.run() }
        // The shell's pid, which `exec` hands to sleep.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let child = try #require(
            pid_t(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        // The command printed its pid, so record has spawned it; a signal that comes before
        // record unblocks them is held pending and passed on then.
        kill(process.processIdentifier, number)
        // A bound on a hang (record never ending), not a timing check.
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(child, SIGKILL) }
        #expect(!process.isRunning, "record did not end")
        process.waitUntilExit()
        #expect(
            process.terminationReason == .exit && process.terminationStatus == 128 + number,
            "\(process.terminationStatus)")
        // record waited for it: gone, not a zombie nor an orphan.
        #expect(kill(child, 0) == -1 && errno == ESRCH, "the command \(child) outlived record")
    }

    @Test(arguments: RecordCrashTests.crashSignals.map(\.name))
    func aShellKilledByACrashSignalExits128PlusItsNumber(signal: String) throws {
        let number = try #require(Self.crashSignals.first { $0.name == signal }).number
        let trace = directory.path + "/\(signal).swtrace"
        let run = try record(["/bin/sh", "-c", "kill -\(signal) $$"], trace: trace)
        #expect(!run.timedOut, "\(run)")
        #expect(run.exitCode == 128 + number, "\(run)")
        // The shell prints nothing when it dies; what is left is record's own line about the trace.
        expectOnlyOwnOutput(run, allowing: ["warning: /bin/sh wrote no trace to \(trace)"])
        // /bin/sh never services the main queue, so there is no trace to read, and record said so.
        #expect(!FileManager.default.fileExists(atPath: trace))
        #expect(run.error.contains("warning: /bin/sh wrote no trace to \(trace)"), "\(run)")
        // The same as without the preload library.
        let bare = try record(["/bin/sh", "-c", "kill -\(signal) $$"], trace: trace, preload: false)
        #expect(bare.exitCode == run.exitCode, "without the preload: \(bare)")
    }

    @Test(.enabled(if: CrashTools.cc != nil, "needs a C compiler: cc is not on PATH"))
    func aCProgramThatSendsItselfSIGSEGVExits139() throws {
        let program = try compile(
            """
            #include <signal.h>
            #include <unistd.h>
            int main(void) {
                kill(getpid(), SIGSEGV);
                return 0;
            }
            """, named: "selfkill")
        let trace = directory.path + "/selfkill.swtrace"
        let run = try record([program], trace: trace)
        #expect(!run.timedOut, "\(run)")
        #expect(run.exitCode == 139, "\(run)")
        expectOnlyOwnOutput(run, allowing: ["warning: \(program) wrote no trace to \(trace)"])
    }

    @Test(
        .enabled(if: CrashTools.cc != nil, "needs a C compiler: cc is not on PATH"),
        .enabled(if: CrashTools.dispatchDirectory != nil, "libdispatch.so is not loaded in the test process"))
    func aDispatchProgramThatFaultsExits139AndLeavesAReadableTrace() throws {
        // A C program (no Swift runtime of its own) that services the main queue, so the preload
        // records it: once the trace is on disk it stalls 400 ms, then writes through a null
        // pointer a second later. The libdispatch functions are declared by hand: gcc cannot parse
        // the toolchain's dispatch headers (they use clang's __has_feature).
        let library = try #require(CrashTools.dispatchDirectory)
        let program = try compile(
            """
            #include <stdint.h>
            #include <stdlib.h>
            #include <sys/stat.h>
            #include <unistd.h>

            struct dispatch_queue_s;
            extern struct dispatch_queue_s _dispatch_main_q;
            uint64_t dispatch_time(uint64_t when, int64_t delta);
            void dispatch_async_f(struct dispatch_queue_s *queue, void *context, void (*work)(void *));
            void dispatch_after_f(uint64_t when, struct dispatch_queue_s *queue, void *context, void (*work)(void *));
            void dispatch_main(void);

            static int *volatile nowhere;
            static int polls;

            static void crash(void *context) { (void)context; *nowhere = 1; }

            static void poll_trace(void *context) {
                const char *path = context;
                struct stat info;
                if ((path != NULL && stat(path, &info) == 0 && info.st_size > 0) || ++polls > 400) {
                    usleep(400000);
                    dispatch_after_f(dispatch_time(0, 1000000000), &_dispatch_main_q, NULL, crash);
                } else {
                    dispatch_after_f(dispatch_time(0, 50000000), &_dispatch_main_q, context, poll_trace);
                }
            }

            int main(void) {
                dispatch_async_f(&_dispatch_main_q, getenv("STALLWATCH_TRACE"), poll_trace);
                dispatch_main();
            }
            """, named: "dispatchcrash", flags: ["-L" + library, "-ldispatch", "-Wl,-rpath," + library])
        let trace = directory.path + "/dispatchcrash.swtrace"
        let run = try record([program], trace: trace)
        #expect(!run.timedOut, "\(run)")
        #expect(run.exitCode == 139, "\(run)")
        guard Self.preloads else {
            expectOnlyOwnOutput(run, allowing: ["warning: \(program) wrote no trace to \(trace)"])
            return
        }
        expectOnlyOwnOutput(run, allowing: [])
        // What the recorder wrote before the crash is a trace `report` reads, with the stall in it.
        let report = try ChildRun(BinaryRun.binary, ["report", trace, "--json"], timeout: .seconds(60))
        #expect(report.exitCode == 0, "\(report)")
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(report.output.utf8)) as? [String: Any], "\(report)")
        let traces = try #require(json["traces"] as? [[String: Any]])
        #expect(traces.first?["process"] as? String == "dispatchcrash", "\(report.output)")
        let stalls = try #require(json["stalls"] as? [String: Any])
        #expect((stalls["total"] as? Int ?? 0) >= 1, "\(report.output)")
    }

    @Test(.enabled(if: CrashTools.python3 != nil, "needs python3 on PATH"))
    func aPythonThatDereferencesNullExits139AtOnce() throws {
        // `python3` as PATH finds it, as a user types it (a pyenv shim is a bash script that forks).
        let trace = directory.path + "/python.swtrace"
        let command = ["python3", "-c", "import ctypes; ctypes.string_at(0)"]
        let run = try record(command, trace: trace)
        #expect(!run.timedOut, "a hang: \(run)")
        #expect(run.exitCode == 139, "\(run)")
        for marker in swiftCrashReportMarkers {
            #expect(!run.error.contains(marker), "a Swift crash report: \(run)")
        }
        let bare = try record(command, trace: trace, preload: false)
        #expect(bare.exitCode == run.exitCode, "without the preload: \(bare)")
    }

    /// A process of the recording that is not a Swift program gets the Swift part (and the
    /// runtime's crash handler) from the preload shim only when its event loop is found, long
    /// after it started: the signals go back to their default then too.
    @Test(
        .enabled(
            if: RecordCrashTests.preloads && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
            "needs the preload library and /usr/bin/python3"))
    func aLoopProgramTheCommandStartsThatSendsItselfSIGSEGVExits139() throws {
        let trace = directory.path + "/loop-child.swtrace"
        let script =
            "import asyncio, os, signal\nasyncio.run(asyncio.sleep(0.05))\nos.kill(os.getpid(), signal.SIGSEGV)\n"
        // Not the shell's last command, which it would exec (and so be the recorded command).
        let run = try record(
            ["/bin/sh", "-c", "\"$0\" \"$@\"; exit $?", "/usr/bin/python3", "-c", script], trace: trace)
        #expect(!run.timedOut, "a hang: \(run)")
        #expect(run.exitCode == 139, "\(run)")
        for marker in swiftCrashReportMarkers {
            #expect(!run.error.contains(marker), "a Swift crash report: \(run)")
        }
        // The loop was watched: the Swift part was loaded before the signal.
        let files = (try? FileManager.default.contentsOfDirectory(atPath: trace + ".d")) ?? []
        #expect(files.contains { $0.hasPrefix("python3-") }, "\(files)")
    }

    @Test(.enabled(if: CrashTools.bash != nil, "needs /bin/bash"))
    func aForkedChildThatCallsExitDoesNotHang() throws {
        // bash runs a command substitution in a forked child that leaves with exit(), which runs the
        // atexit handlers the parent registered (the preload's among them) without its threads.
        let trace = directory.path + "/fork.swtrace"
        let run = try record(["/bin/bash", "-c", "x=$(echo forked); echo \"$x\"; exit 5"], trace: trace)
        #expect(!run.timedOut, "a hang: \(run)")
        #expect(run.exitCode == 5, "\(run)")
        #expect(run.output == "forked\n", "\(run)")
        expectOnlyOwnOutput(run, allowing: ["warning: /bin/bash wrote no trace to \(trace)"])
    }
}
