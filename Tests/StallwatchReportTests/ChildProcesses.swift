// A child process's sanitizer report fails the test that started it, and a failed check on a
// child shows the child's standard error: the `stallwatch` CLI, the test host and the demo are
// built with the test's sanitizer and inherit its options (scripts/sanitize.sh).
import Foundation
import StallwatchCore
import Testing

/// What a child process did: its exit status and both output streams.
struct ChildRun: Sendable, CustomStringConvertible {
    var name: String
    var exitCode: Int32
    var output: String
    var error: String
    /// Whether it was killed, with everything it started, for outliving its timeout.
    var timedOut = false

    /// The status and the standard error, for a check's comment.
    var description: String {
        let ending = timedOut ? "was killed at its timeout" : "exited \(exitCode)"
        return "\(name) \(ending); its standard error:\n\(error)"
    }

    /// Runs `executable` with `arguments` and `environment` (nil: this process's) and waits;
    /// both streams are read at once, so neither pipe fills while the other is read. A sanitizer
    /// report in its standard error is recorded as an issue. With a `timeout`, it runs under
    /// `/usr/bin/timeout` (when there is one) in a process group of its own, which is sent SIGKILL
    /// when the time is up: a hung child or grandchild fails its test instead of blocking the suite.
    init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        timeout: Duration? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let process = Process()
        let killer = "/usr/bin/timeout"
        if let timeout, FileManager.default.isExecutableFile(atPath: killer) {
            // SIGKILL: the test runner may have SIGTERM ignored, which its children inherit.
            process.executableURL = URL(fileURLWithPath: killer)
            process.arguments = ["-s", "KILL", "\(timeout.components.seconds)s", executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        if let environment { process.environment = environment }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let errorText = Locked("")
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            let data = error.fileHandleForReading.readDataToEndOfFile()
            errorText.withLock { $0 = String(decoding: data, as: UTF8.self) }
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        name = URL(fileURLWithPath: executable).lastPathComponent
        exitCode = process.terminationStatus
        // timeout's SIGKILL goes to its own process group, timeout included.
        timedOut = timeout != nil && process.terminationReason == .uncaughtSignal && exitCode == SIGKILL
        self.output = String(decoding: outputData, as: UTF8.self)
        self.error = errorText.withLock { $0 }
        expectNoSanitizerReport(self.error, from: name, sourceLocation: sourceLocation)
    }
}

/// A child process read while it runs: standard output on a pipe, standard error in a
/// temporary file (a pipe nobody reads could fill and stop the child).
final class StartedChild {
    let process: Process
    let output: Pipe
    let name: String
    private let errorPath = NSTemporaryDirectory() + "stallwatch-child-\(UUID().uuidString).err"

    init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        output = Pipe()
        process.standardOutput = output
        name = URL(fileURLWithPath: executable).lastPathComponent
        guard FileManager.default.createFile(atPath: errorPath, contents: nil),
            let errors = FileHandle(forWritingAtPath: errorPath)
        else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: errorPath]) }
        process.standardError = errors
        defer { try? errors.close() }
        try process.run()
    }

    deinit { try? FileManager.default.removeItem(atPath: errorPath) }

    /// Reads standard output until `marker` appears or the child closes it; returns what it read.
    func read(until marker: String) -> String {
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains(marker) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        return String(decoding: seen, as: UTF8.self)
    }

    /// Waits for the child and returns its run (`output`: what is left of standard output). A
    /// sanitizer report in its standard error is recorded as an issue.
    func finish(sourceLocation: SourceLocation = #_sourceLocation) -> ChildRun {
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        expectNoSanitizerReport(errors, from: name, sourceLocation: sourceLocation)
        return ChildRun(
            name: name, exitCode: process.terminationStatus, output: String(decoding: rest, as: UTF8.self),
            error: errors)
    }
}

extension ChildRun {
    init(name: String, exitCode: Int32, output: String, error: String) {
        self.name = name
        self.exitCode = exitCode
        self.output = output
        self.error = error
    }
}

/// Records a `ChildSanitizerReport` if `errors` (a child's standard error) holds a sanitizer
/// report.
func expectNoSanitizerReport(_ errors: String, from child: String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard let line = SanitizerReport.firstLine(in: errors) else { return }
    Issue.record(ChildSanitizerReport(child: child, line: line, errors: errors), sourceLocation: sourceLocation)
}

/// A sanitizer report in a child's standard error, recorded as an error (a thrown-error issue,
/// not a failed expectation).
struct ChildSanitizerReport: Error, CustomStringConvertible {
    var child: String
    var line: String
    var errors: String

    var description: String { "\(child) printed a sanitizer report (\(line)); its standard error:\n\(errors)" }
}

enum SanitizerReport {
    /// The first line of `text` that starts or sums up a sanitizer's report: ASan's and LSan's
    /// `ERROR:`, TSan's `WARNING:`, any `SUMMARY: …Sanitizer`, UBSan's `runtime error:`.
    static func firstLine(in text: String) -> String? {
        text.split(whereSeparator: \.isNewline).first { line in
            line.contains("ERROR: AddressSanitizer") || line.contains("ERROR: LeakSanitizer")
                || line.contains("WARNING: ThreadSanitizer") || line.contains("runtime error:")
                || line.contains(/SUMMARY: [A-Za-z]*Sanitizer/)
        }.map(String.init)
    }
}
