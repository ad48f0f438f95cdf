// A process of a recording loads the Swift part of the preload (libStallwatchPreload.so, the Swift
// runtime, libdispatch) only if it needs it: the recorded command and a Swift program at once, a
// process that runs an event loop when its loop is found; a shell or compiler the command starts
// maps the C shim alone. (The shim's lazy load on an event loop: UnmodifiedLoopTests, as a child.)
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@Suite(.serialized) struct PreloadShimTests {
    /// Whether `record` preloads here: the preload library is built next to the CLI, and this is
    /// not a sanitizer build (which preloads nothing: docs/sanitizers.md).
    static let preloads =
        FileManager.default.isReadableFile(atPath: BinaryRun.productDirectory + "/" + StallwatchSymbols.preloadLibrary)
        && ProcessInfo.processInfo.environment["STALLWATCH_PRELOAD", default: ""].isEmpty
        && !Sanitizer.address && !Sanitizer.thread

    /// The shim must be there too: scripts/test.sh builds it; `swift test` alone does not.
    func requireShim(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(
            FileManager.default.isReadableFile(
                atPath: BinaryRun.productDirectory + "/" + StallwatchSymbols.preloadShim),
            "no \(StallwatchSymbols.preloadShim) next to stallwatch: run scripts/build-preload-shim.sh first",
            sourceLocation: sourceLocation)
    }

    let directory = NSTemporaryDirectory() + "preload-shim-\(UUID().uuidString)"

    init() throws { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }

    /// The file names of the objects mapped in a process, from its /proc/PID/maps text.
    func mappedNames(_ maps: some StringProtocol) -> Set<String> {
        Set(
            maps.split(separator: "\n").compactMap {
                $0.split(separator: " ").last.map { String(Frame.basename(String($0))) }
            })
    }

    @Test(.enabled(if: preloads, "needs the preload library, and no sanitizer"))
    func aChildThatIsNotSwiftAndRunsNoLoopMapsTheShimAlone() throws {
        try requireShim()
        // The shell is the recorded command (the Swift part at once); cat is a process it starts.
        let run = try runProduct(
            "stallwatch",
            [
                "record", "-o", directory + "/sh.swtrace", "--", "/bin/sh", "-c",
                "cat /proc/$$/maps; echo --; cat /proc/self/maps",
            ])
        #expect(run.exitCode == 0, "\(run)")
        let parts = run.output.components(separatedBy: "--\n")
        try #require(parts.count == 2, "\(run.output)")
        let (root, child) = (mappedNames(parts[0]), mappedNames(parts[1]))
        #expect(
            root.contains(StallwatchSymbols.preloadShim) && root.contains(StallwatchSymbols.preloadLibrary), "\(root)")
        #expect(child.contains(StallwatchSymbols.preloadShim), "\(child)")
        for swift in [StallwatchSymbols.preloadLibrary, "libswiftCore.so", "libdispatch.so", "libFoundation.so"] {
            #expect(!child.contains(swift), "the child mapped \(swift): \(child.sorted())")
        }
    }

    @Test(.enabled(if: preloads, "needs the preload library, and no sanitizer"))
    func aSwiftProgramTheCommandStartsIsWatchedFromItsStart() throws {
        try requireShim()
        let trace = directory + "/swift-child.swtrace"
        // Not the last command of the shell, which it would exec (and so be the command itself).
        let run = try runProduct(
            "stallwatch",
            [
                "record", "-o", trace, "--budget", "40", "--", "/bin/sh", "-c", "\"$0\" \"$@\"; exit $?",
                builtProduct("DispatchMainApp"), "--stall-ms", "150",
            ])
        #expect(run.exitCode == 0, "\(run)")
        let files = try FileManager.default.contentsOfDirectory(atPath: trace + ".d")
        let own = try #require(files.first { $0.hasPrefix("DispatchMainApp-") }, "\(files)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: trace + ".d/" + own)))
        let decoded = DecodedTrace(decoding: bytes, fileName: own)
        #expect(decoded.outcome.endedCleanly, "\(decoded.outcome.problems)")
        let stalls = decoded.stalls.filter { $0.durationNanos >= 100_000_000 }
        #expect(stalls.count == 1, "\(decoded.stalls.map { ($0.callout.label ?? "-", $0.durationNanos) })")
        // Sampled from its main queue's first item: some sample holds the culprit (which share of
        // them does is HeartbeatSampleTests' to check).
        #expect(stalls.first?.callout.label == "main-queue", "\(stalls.map(\.callout))")
        let frames = stalls.flatMap(\.samples).flatMap(\.frames).compactMap(\.symbol)
        #expect(frames.contains { $0.contains("crunchNumbers") }, "\(frames.prefix(20))")
    }

    /// The shim finds the Swift part's entry points with dlsym, so its dynamic symbol table must
    /// hold them: a release build left an internal @_cdecl function local, and the shim then
    /// recorded nothing ("undefined symbol: stallwatch_preload_start"). scripts/build-preload-shim.sh
    /// checks the same of the library beside the shim it builds, in release builds too.
    @Test(.enabled(if: preloads && FileManager.default.isExecutableFile(atPath: "/usr/bin/nm")))
    func theSwiftPartExportsWhatTheShimLooksUp() throws {
        let nm = Process()
        nm.executableURL = URL(fileURLWithPath: "/usr/bin/nm")
        nm.arguments = ["-D", "--defined-only", BinaryRun.productDirectory + "/" + StallwatchSymbols.preloadLibrary]
        let (output, error) = try runToEnd(nm)
        #expect(nm.terminationStatus == 0, "\(error)")
        let exported = Set(
            output.split(separator: "\n").compactMap { line -> String? in
                let fields = line.split(separator: " ")
                return fields.count == 3 && fields[1] == "T" ? String(fields[2]) : nil
            })
        for symbol in ["stallwatch_preload_start", "stallwatch_preload_prepare_loop_thread"] {
            #expect(exported.contains(symbol), "\(StallwatchSymbols.preloadLibrary) does not export \(symbol)")
        }
    }

    /// What each process of a recording watched, by its program name (`report --json`).
    func watched(_ trace: String) throws -> [String: [String]] {
        let report = try runProduct("stallwatch", ["report", trace, "--json"])
        try #require(report.exitCode == 0, "\(report)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(report.output.utf8)) as? [String: Any])
        let traces = try #require(object["traces"] as? [[String: Any]])
        return Dictionary(
            traces.map { trace in
                (
                    trace["process"] as? String ?? "?",
                    (trace["watched"] as? [[String: Any]] ?? []).compactMap { $0["how"] as? String }
                )
            }, uniquingKeysWith: +)
    }

    /// The shim starts the Swift part's monitor after dlopen returned: inside it, glibc has not yet
    /// put the library in the global scope, the pool hook would not be found, and a pool heartbeat
    /// task would run (and the pool be watched) in every process the shim loads it into.
    @Test(.enabled(if: preloads && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
    func aProcessTheShimLoadsTheSwiftPartIntoWatchesNoPoolItNeverUsed() throws {
        try requireShim()
        let script = directory + "/loop.py"
        try Data("import asyncio\nasyncio.run(asyncio.sleep(0.1))\n".utf8).write(to: URL(fileURLWithPath: script))
        let trace = directory + "/python-child.swtrace"
        let run = try runProduct(
            "stallwatch",
            ["record", "-o", trace, "--", "/bin/sh", "-c", "\"$0\" \"$@\"; exit $?", "/usr/bin/python3", script])
        #expect(run.exitCode == 0, "\(run)")
        let processes = try watched(trace)
        // The loop found by the shim's waits, before the Swift part was loaded, and nothing else.
        #expect(processes["python3"] == ["epoll"], "\(processes)")
        #expect(processes["sh"]?.isEmpty ?? true, "\(processes)")
    }
}
