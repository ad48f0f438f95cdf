// An exit test's child that prints a sanitizer report fails its test, and a failed exit test
// shows what the child wrote to standard error (the checks here run in children built with the
// test's sanitizer and its options).
import Foundation
import Testing

/// Where the child of an exit test writes its standard error. Swift Testing shows an exit
/// test's standard error nowhere, and returns it (`observing: [\.standardErrorContent]`) only
/// when the exit test passed; so the child sends it to this file (`sendStandardError(to:)`,
/// the path passed in the closure's capture list) and `check` reads it back either way:
///
///     let child = ExitTestErrors()
///     let result = await #expect(processExitsWith: .success) { [path = child.path as String] in
///         sendStandardError(to: path)
///         checkInstall()
///     }
///     child.check(result)
struct ExitTestErrors {
    let path = NSTemporaryDirectory() + "stallwatch-exit-test-\(UUID().uuidString).err"

    /// After one exit test: a sanitizer report in the child's standard error fails the test,
    /// and a failed exit test (`result` is nil) shows it. Empties the file for the next one.
    func check(_ result: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation) {
        let errors = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: path)
        if let line = SanitizerReport.firstLine(in: errors) {
            Issue.record(
                ChildSanitizerReport(child: "the exit test's child", line: line, errors: errors),
                sourceLocation: sourceLocation)
        }
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

/// In an exit test's child: `#expect(condition, message)` as an issue that keeps its message.
/// Swift Testing forwards a child's failed `#expect` as a bare "Issue recorded", without its
/// message or values (what CI showed of a failed perf check), but an `Issue.record` with its
/// comment.
func childExpect(
    _ condition: Bool, _ message: @autoclosure () -> String = "", sourceLocation: SourceLocation = #_sourceLocation
) {
    guard !condition else { return }
    let text = message()
    Issue.record(Comment(rawValue: text.isEmpty ? "expectation failed" : text), sourceLocation: sourceLocation)
}
