// A recorded trace says where it comes from: a random trace id, this host, this executable and
// its GNU build id (as readelf reads it from the file), and the app version given or set in
// STALLWATCH_APP_VERSION.
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct TraceOriginTests {
    /// Records an idle moment of a loop and returns the decoded trace.
    func record(appVersion: String?) async throws -> DecodedTrace {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-origin-\(UUID()).trace")
            .path
        defer { unlink(path) }
        try await onLoopThreadThrowing { loop in
            let recorder = try TraceRecorder(path: path, loop: loop, mode: .stalls, appVersion: appVersion)
            try recorder.start()
            loop.runOnce(timeout: .milliseconds(20))
            recorder.stop()
        }
        return DecodedTrace(decoding: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), fileName: path)
    }

    /// The build id `readelf -n` prints for the test executable, lowercase hex.
    func buildIDFromReadelf() throws -> String {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let readelf = try ChildRun("/usr/bin/readelf", ["-n", executable], environment: [:])
        #expect(readelf.exitCode == 0, "\(readelf)")
        let line = try #require(readelf.output.split(separator: "\n").first { $0.contains("Build ID:") }, "\(readelf)")
        return String(try #require(line.split(separator: " ").last))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/readelf"), "needs binutils' readelf"))
    func theOriginNamesHostExecutableBuildAndVersion() async throws {
        let trace = try await record(appVersion: "4.2.1")
        let origin = try #require(trace.origin)
        #expect(origin.traceID.count == 16)
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, 255)
        #expect(origin.host == String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        #expect(origin.executable == (try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")))
        #expect(origin.buildID.map { String(format: "%02x", $0) }.joined() == (try buildIDFromReadelf()))
        #expect(origin.appVersion == "4.2.1")
    }

    @Test func twoRecordingsHaveDifferentTraceIDsAndNoVersionByDefault() async throws {
        let first = try await record(appVersion: nil)
        let second = try await record(appVersion: nil)
        #expect(first.origin?.traceID != second.origin?.traceID)
        if ProcessInfo.processInfo.environment["STALLWATCH_APP_VERSION"] == nil {
            #expect(first.origin?.appVersion == nil)
        }
    }
}
