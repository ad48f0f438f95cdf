// A recorded trace holds every stall with its samples, symbols and posting site; it survives
// a SIGKILL mid-hang; recording is enabled from the environment without code; a real trace
// cut at any byte still decodes up to its last whole record.
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct TraceRecorderTests {
    func temporaryTrace(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-\(name)-\(UUID()).trace").path
    }

    func readBytes(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Records a loop that stalls twice (compute, then a sleep) and returns the trace path.
    func recordTwoStalls(mode: TraceMode) async throws -> String {
        let path = temporaryTrace("recorder")
        try await onLoopThreadThrowing { loop in
            let recorder = try TraceRecorder(path: path, loop: loop, mode: mode)
            try recorder.start()
            // At once: start() returns with the watchdog armed, and the loop logs every overrun.
            loop.post(label: "spin") { spinForStallTest(milliseconds: 70) }
            loop.post(label: "sleep") { sleepForStallTest(milliseconds: 60) }
            for _ in 0..<100 { loop.post {} }
            let done = Box(false)
            loop.schedule(after: .milliseconds(200)) { _ in done.value = true }
            while !done.value { loop.runOnce(timeout: .milliseconds(100)) }
            recorder.stop()
        }
        return path
    }

    @Test func aRecordedTraceHoldsTheStallsWithSamplesAndSymbols() async throws {
        let path = try await recordTwoStalls(mode: .stalls)
        defer { unlink(path) }
        let trace = DecodedTrace(decoding: try readBytes(path), fileName: path)
        #expect(trace.outcome.endedCleanly, "\(trace.outcome.problems)")
        #expect(trace.header?.pid == UInt32(getpid()))
        #expect(trace.architecture == "x86_64")
        #expect(!trace.modules.isEmpty)
        #expect(trace.stalls.count == 2, "\(trace.stalls.map { ($0.callout.label, $0.duration) })")
        let spin = try #require(trace.stalls.first { $0.callout.label == "spin" })
        #expect(spin.callout.file == "StallwatchTests/TraceRecorderTests.swift")
        #expect((spin.duration ?? .zero) >= .milliseconds(65))
        #expect(!spin.samples.isEmpty)
        #expect(spin.samples.contains { $0.frames.contains { $0.symbol?.contains("spinForStallTest") == true } })
        #expect(!spin.flags.contains(.unfinished))
        #expect(!trace.latencyHistograms.isEmpty)
    }

    @Test func fullModeRecordsEveryCallout() async throws {
        let path = try await recordTwoStalls(mode: .full)
        defer { unlink(path) }
        let trace = DecodedTrace(decoding: try readBytes(path), fileName: path)
        #expect(trace.outcome.endedCleanly)
        // 102 posts plus the timer; the recorder's own attach post may add one.
        #expect(trace.calloutCount >= 103, "\(trace.calloutCount)")
        #expect(trace.stalls.count == 2)
    }

    @Test func aTraceCutAtAnyByteDecodesUpToItsLastWholeRecord() async throws {
        let path = try await recordTwoStalls(mode: .stalls)
        defer { unlink(path) }
        let bytes = try readBytes(path)
        let whole = DecodedTrace(decoding: bytes).outcome.recordCount
        var previous = 0
        for cut in stride(from: 0, through: bytes.count, by: 1) {
            var decoder = TraceDecoder(Array(bytes[0..<cut]), fileName: path)
            var count = 0
            while decoder.next() != nil { count += 1 }
            // Never more than the whole trace, never fewer records for a longer prefix.
            #expect(count <= whole && count >= previous, "cut at \(cut): \(count) records")
            // A prefix ends at a record boundary (clean) or mid-record (truncated), never corrupt.
            #expect(decoder.outcome.corruptRegions.isEmpty, "cut at \(cut): \(decoder.outcome.problems)")
            previous = count
        }
        #expect(previous == whole)
    }

    @Test func mutationsOfARealTraceNeverCrashTheReader() async throws {
        let path = try await recordTwoStalls(mode: .stalls)
        defer { unlink(path) }
        let original = try readBytes(path)
        var mutator = TraceMutator(seed: 0x5EED_0F57_A11C_A7)  // the same mutations every run
        var reportedProblems = 0
        // 30,000 here on a recorder-written trace (~11 KB, ~7 s in a debug build); the format's
        // own suite adds 100,000 on encoder-built traces, the bench 500,000 in release.
        let rounds = 30_000
        for _ in 0..<rounds {
            var copy = original
            mutator.mutate(&copy, count: 1 + Int(mutator.next(below: 3)))
            let outcome = copy.withUnsafeBytes { TraceDecoder.decode($0, fileName: path) { _, _ in } }
            if !outcome.endedCleanly {
                reportedProblems += 1
                // Every problem names the file and an offset inside it.
                #expect(outcome.problems.allSatisfy { $0.fileName == path && $0.offset <= copy.count })
            }
        }
        // Most mutations are noticed (some change only a number, which no reader can tell).
        #expect(reportedProblems > rounds / 2, "\(reportedProblems)")
    }

    @Test func aProcessKilledMidHangLeavesTheUnfinishedHangWithASample() throws {
        let path = temporaryTrace("killed")
        defer { unlink(path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: builtProduct("StallwatchTestHost"))
        process.arguments = ["hang"]
        process.environment = ProcessInfo.processInfo.environment.merging(["STALLWATCH_TRACE": path]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // "hanging" is printed as the hang starts; kill 500 ms into it.
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("hanging") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        // A real kill of a real process, so a real wait: the margins below (1.5 s of 2.6) hold on
        // any machine that runs the child at all. 2.6 s in: it was a 19 ms hitch that passed `gate --max-hangs 0` when only the first
        // sample was on disk and an unfinished stall ended there.
        usleep(2_600_000)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        let trace = DecodedTrace(decoding: try readBytes(path), fileName: path)
        let hang = try #require(trace.stalls.first)
        #expect(hang.callout.label == "hang forever")
        #expect(hang.flags.contains(.unfinished))
        // Known to run until the last `recordedUntil` (each second) or its last sample (its
        // samples reach the file every half second): at least 1.5 s of the 2.6 s.
        #expect(StallAccounting.duration(hang) >= 1_500_000_000, "\(StallAccounting.duration(hang))")
        #expect(hang.tier == .severe)
        #expect(hang.samples.count >= 3, "\(hang.samples.count)")
        let gate = try runProduct("stallwatch", ["gate", path, "--max-hangs", "0"])
        #expect(gate.exitCode == 1, "\(gate.output)")
    }

    /// The recorder wrote 436 bytes of trace into the app's own file once the app had closed
    /// the trace's descriptor and opened files of its own (which got its number).
    @Test func afterTheAppClosesTheTracesDescriptorNothingIsWrittenIntoItsFiles() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        let path = directory.path + "/closed.swtrace"
        let run = try runProduct(
            "StallwatchTestHost", ["close-fds", directory.path], environment: ["STALLWATCH_TRACE": path])
        #expect(run.exitCode == 0 && run.output.contains("returned=1"), "\(run)")
        for index in 0..<40 {
            let size =
                (try? FileManager.default.attributesOfItem(atPath: directory.path + "/appfile-\(index).txt"))?[
                    .size] as? Int
            #expect(size == 0, "appfile-\(index).txt has \(size ?? -1) bytes")
        }
        #expect(run.error.contains("the program closed its descriptor"), "\(run.error)")
    }

    @Test func aForkedChildThatCallsExitDoesNotHangOrTouchTheTrace() throws {
        // The child inherits the recorder's atexit handler but not its threads: stopping the
        // recorder there would wait for ever. The child's alarm (10 s) and the timeout turn that
        // regression into a failure (the child killed, not 7) rather than a hung suite.
        let path = temporaryTrace("fork-exit")
        defer { unlink(path) }
        var environment = ProcessInfo.processInfo.environment
        environment["STALLWATCH_TRACE"] = path
        if Sanitizer.address {
            // LeakSanitizer's check at the forked child's exit() sees the parent's heap without
            // the threads that hold it, and reports all of it: no leak check for this child.
            environment["ASAN_OPTIONS"] = (environment["ASAN_OPTIONS"].map { $0 + ":" } ?? "") + "detect_leaks=0"
        }
        let run = try ChildRun(
            "/usr/bin/timeout", ["30", builtProduct("StallwatchTestHost"), "fork-exit"], environment: environment)
        #expect(run.exitCode == 0, "\(run)")
        #expect(run.output.contains("child=7\n") && run.output.contains("returned=1\n"), "\(run.output)")
        let trace = DecodedTrace(decoding: try readBytes(path), fileName: path)
        #expect(trace.outcome.endedCleanly, "\(trace.outcome.problems)")
        #expect(trace.stalls.contains { $0.callout.label == "spin" }, "\(trace.stalls.map(\.callout))")
    }

    @Test func anAppWithItsOwnMonitorKeepsItAndTheEnvironmentRecordsThatMonitor() throws {
        // DetectStalls starts its own StallMonitor on the main loop (a second one would trap):
        // the environment's recorder records the app's monitor, which keeps its own callbacks.
        let path = temporaryTrace("own-monitor")
        defer { unlink(path) }
        let run = try runProduct("DetectStalls", [], environment: ["STALLWATCH_TRACE": path])
        #expect(run.exitCode == 0, "\(run.error)")
        #expect(run.error.components(separatedBy: "records the app's own StallMonitor").count == 2, "\(run.error)")
        #expect(run.output.contains("seconds at DetectStalls/main.swift"), "its own monitor reports: \(run.output)")
        let trace = DecodedTrace(decoding: try readBytes(path), fileName: path)
        #expect(trace.outcome.endedCleanly, "\(trace.outcome.problems)")
        #expect(!trace.stalls.isEmpty)
        #expect(
            trace.stalls.allSatisfy { $0.callout.file.hasPrefix("DetectStalls/") }, "\(trace.stalls.map(\.callout))")
    }

    @Test func anAppThatStartsItsMonitorLaterTakesTheLoopOverAndTheTraceGoesOn() throws {
        let path = temporaryTrace("late-monitor")
        defer { unlink(path) }
        let run = try runProduct("StallwatchTestHost", ["late-monitor"], environment: ["STALLWATCH_TRACE": path])
        #expect(run.exitCode == 0, "\(run.error)")
        #expect(
            run.error.components(separatedBy: "records the app's own StallMonitor from here on").count == 2,
            "\(run.error)")
        // The app's monitor saw the stall after the hand-over; the one trace holds both.
        #expect(run.output.contains("own=spin after"), "\(run.output)")
        let trace = DecodedTrace(decoding: try readBytes(path), fileName: path)
        #expect(trace.outcome.endedCleanly, "\(trace.outcome.problems)")
        #expect(trace.stalls.map(\.callout.label) == ["spin before", "spin after"])
    }

    @Test func theEnvironmentTurnsRecordingOnAndBadValuesOnlyWarn() throws {
        let path = temporaryTrace("environment")
        defer { unlink(path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: builtProduct("StallwatchTestHost"))
        process.arguments = ["stalls"]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "STALLWATCH_TRACE": path, "STALLWATCH_BUDGET_MS": "fast", "STALLWATCH_MODE": "everything",
        ]) { $1 }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0)
        #expect(stderr.contains("STALLWATCH_BUDGET_MS=fast"))
        #expect(stderr.contains("STALLWATCH_MODE=everything"))
        let trace = DecodedTrace(decoding: try readBytes(path), fileName: path)
        #expect(trace.header?.mode == .stalls)
        #expect(trace.stalls.count == 2, "\(trace.stalls.map(\.callout))")
    }

    @Test func environmentParsing() {
        let good = TraceRecorder.EnvironmentRequest([
            "STALLWATCH_TRACE": "/tmp/x.trace", "STALLWATCH_BUDGET_MS": "8.5", "STALLWATCH_MODE": "full",
        ])
        #expect(good?.budget == .microseconds(8_500))
        #expect(good?.mode == .full)
        #expect(good?.warnings.isEmpty == true)
        #expect(TraceRecorder.EnvironmentRequest([:]) == nil)
        let bad = TraceRecorder.EnvironmentRequest(["STALLWATCH_TRACE": "t", "STALLWATCH_BUDGET_MS": "-3"])
        #expect(bad?.budget == nil)
        #expect(bad?.warnings.count == 1)
        // Past a day (1e20 ms overflowed the nanosecond conversion and crashed every recorded
        // program before its main): each warned once, the default used.
        let huge = TraceRecorder.EnvironmentRequest([
            "STALLWATCH_TRACE": "t", "STALLWATCH_BUDGET_MS": "1e20", "STALLWATCH_FLIGHT_MS": "9.3e12",
            "STALLWATCH_UNSERVICED_MS": "1e300",
        ])
        #expect(huge?.budget == nil && huge?.flightWindow == nil && huge?.unservicedWarning == nil)
        #expect(huge?.warnings.count == 3)
        #expect(huge?.warnings.first?.contains("using 16.66") == true, "\(huge?.warnings ?? [])")
        let none = TraceRecorder.EnvironmentRequest(["STALLWATCH_TRACE": "t", "STALLWATCH_FLIGHT_MS": "0"])
        #expect(none?.flightWindow == .zero && none?.warnings.isEmpty == true)
        // STALLWATCH_PERF took 0, off, false and no; STALLWATCH_POOL only 0. Both read one way.
        for off in ["0", "off", "OFF", "false", "no"] { #expect(StallwatchEnvironment.isOff(off)) }
        for on in [nil, "1", "on", "yes", ""] { #expect(!StallwatchEnvironment.isOff(on)) }
    }

    /// Which process of a recorded tree writes the trace itself: the claimed root; else the
    /// child of `stallwatch record`; else (STALLWATCH_TRACE given by hand) the process itself.
    /// Only the root records when children are off.
    @Test func theRootOfARecordedProcessTreeWritesTheTrace() {
        func request(_ variables: [String: String], pid: pid_t = 100, parent: pid_t = 50) -> (Bool, Bool)? {
            TraceRecorder.EnvironmentRequest(
                variables.merging(["STALLWATCH_TRACE": "t"]) { a, _ in a }, pid: pid, parentPID: parent
            )
            .map { ($0.isRoot, $0.rootUnclaimed) }
        }
        #expect(request([:])! == (true, true))
        #expect(request(["STALLWATCH_ROOT_PID": "100"])! == (true, false))
        #expect(request(["STALLWATCH_ROOT_PID": "99"])! == (false, false))
        #expect(request(["STALLWATCH_RECORD_PID": "50"])! == (true, true))
        #expect(request(["STALLWATCH_RECORD_PID": "50"], parent: 99)! == (false, true))
        // A claim wins over the parent: a process re-parented to record is not the root.
        #expect(request(["STALLWATCH_RECORD_PID": "50", "STALLWATCH_ROOT_PID": "99"])! == (false, false))
        #expect(request(["STALLWATCH_ROOT_PID": "99", "STALLWATCH_CHILDREN": "0"]) == nil)
        #expect(request(["STALLWATCH_ROOT_PID": "100", "STALLWATCH_CHILDREN": "0"])! == (true, false))
        #expect(request(["STALLWATCH_ROOT_PID": "junk"])! == (true, true))
    }

    @Test func aChildProcessFileIsNamedForItsProgramAndPid() {
        #expect(ProcessTreeFiles.childFileName(program: "swift-build", pid: 42) == "swift-build-42.swtrace")
        #expect(
            ProcessTreeFiles.childFileName(program: "swift-build", pid: 42, attempt: 1) == "swift-build-42-2.swtrace")
        #expect(ProcessTreeFiles.childFileName(program: "../a b/é", pid: 7) == "_._a_b___-7.swtrace")
        #expect(ProcessTreeFiles.childFileName(program: "", pid: 7) == "process-7.swtrace")
        #expect(ProcessTreeFiles.childFileName(program: String(repeating: "x", count: 99), pid: 1).count == 48 + 10)
        #expect(ProcessTreeFiles.childDirectory(of: "/a/t.swtrace") == "/a/t.swtrace.d")
    }
}
