// A child process's sanitizer report fails the test that started it, and a failed check on a
// child shows the child's standard error: the test host, the samples, the CLI and exit tests are
// built with the test's sanitizer and inherit its options (scripts/sanitize.sh).
import Foundation
import StallwatchCore
import Testing

@testable import Stallwatch

/// The path of an executable built next to the test bundle.
func builtProduct(_ name: String) -> String {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent(name).path
}

/// What a child process did: its exit status and both output streams. Its description (for a
/// check's comment) is the status and the standard error.
struct ProductRun: Sendable, CustomStringConvertible {
    var name: String
    var status: Int32
    var output: String
    var errors: String

    var description: String { "\(name) exited \(status); its standard error:\n\(errors)" }
}

/// Runs a built executable with `arguments` and `environment` added to this process's, and
/// waits for it. A sanitizer report in its standard error is recorded as an issue.
func runProduct(
    _ name: String, _ arguments: [String], environment: [String: String] = [:],
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> ProductRun {
    try runChild(
        builtProduct(name), arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
        sourceLocation: sourceLocation)
}

/// Runs `executable` with exactly `environment` and waits; both streams are read at once, so
/// neither pipe fills while the other is read. A sanitizer report in its standard error is
/// recorded as an issue.
func runChild(
    _ executable: String, _ arguments: [String], environment: [String: String],
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> ProductRun {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = environment
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let errorText = Locked("")
    let group = DispatchGroup()
    DispatchQueue.global().async(group: group) {
        let data = errors.fileHandleForReading.readDataToEndOfFile()
        errorText.withLock { $0 = String(decoding: data, as: UTF8.self) }
    }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    let run = ProductRun(
        name: URL(fileURLWithPath: executable).lastPathComponent, status: process.terminationStatus,
        output: String(decoding: data, as: UTF8.self), errors: errorText.withLock { $0 })
    expectNoSanitizerReport(run.errors, from: run.name, sourceLocation: sourceLocation)
    return run
}

/// Where the child of an exit test writes its standard error. Swift Testing shows an exit
/// test's standard error nowhere, and returns it (`observing: [\.standardErrorContent]`) only
/// when the exit test passed; so the child sends it to this file (`sendStandardError(to:)`,
/// the path passed in the closure's capture list) and `check` reads it back either way:
///
///     let child = ExitTestErrors()
///     let zero = await #expect(processExitsWith: .failure) { [path = child.path as String] in
///         sendStandardError(to: path)
///         _ = QueuePool(width: 0)
///     }
///     child.check(zero)
struct ExitTestErrors {
    let path = NSTemporaryDirectory() + "stallwatch-exit-test-\(UUID().uuidString).err"

    /// After one exit test: a sanitizer report in the child's standard error fails the test,
    /// and a failed exit test (`result` is nil) shows it. Empties the file for the next one.
    func check(_ result: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation) {
        let errors = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: path)
        expectNoSanitizerReport(errors, from: "the exit test's child", sourceLocation: sourceLocation)
        if result == nil {
            Issue.record("the exit test's child wrote to standard error:\n\(errors)", sourceLocation: sourceLocation)
        }
    }
}

/// In an exit test's child, first: its standard error (descriptor 2, where the sanitizers and
/// the Swift runtime write) goes to the file at `path`.
func sendStandardError(to path: String) {
    let file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard file >= 0 else { return }
    dup2(file, STDERR_FILENO)
    close(file)
}

/// Records a `ChildSanitizerReport` if `errors` (a child's standard error) holds a sanitizer
/// report.
func expectNoSanitizerReport(_ errors: String, from child: String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard let line = SanitizerReport.firstLine(in: errors) else { return }
    Issue.record(ChildSanitizerReport(child: child, line: line, errors: errors), sourceLocation: sourceLocation)
}

/// A sanitizer report in a child's standard error, recorded as an error (never a plain failed
/// expectation), so the `.timingSensitive` trait never runs the test again after one.
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
