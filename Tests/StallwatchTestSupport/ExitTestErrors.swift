// An exit test's child that prints a sanitizer report fails its test, a failed exit test shows
// what the child wrote to standard error, and a failed check in the child keeps its message.
import Foundation
import Testing

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
package struct ExitTestErrors {
    package let path = NSTemporaryDirectory() + "stallwatch-exit-test-\(UUID().uuidString).err"

    package init() {}

    /// After one exit test: a sanitizer report in the child's standard error fails the test,
    /// and a failed exit test (`result` is nil) shows it. Empties the file for the next one.
    package func check(_ result: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation) {
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
package func sendStandardError(to path: String) {
    let file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard file >= 0 else { return }
    dup2(file, STDERR_FILENO)
    close(file)
}

/// In an exit test's child: `#expect(condition, message)` as an issue that keeps its message.
/// Swift Testing forwards a child's failed `#expect` as a bare "Issue recorded", without its
/// message or values, but an `Issue.record` with its comment.
package func childExpect(
    _ condition: Bool, _ message: @autoclosure () -> String = "", sourceLocation: SourceLocation = #_sourceLocation
) {
    guard !condition else { return }
    let text = message()
    Issue.record(Comment(rawValue: text.isEmpty ? "expectation failed" : text), sourceLocation: sourceLocation)
}
