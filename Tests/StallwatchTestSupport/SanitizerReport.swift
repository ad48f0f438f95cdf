// A child process that prints a sanitizer report fails the test that started it.
import Testing

/// Records a `ChildSanitizerReport` if `errors` (a child's standard error) holds a sanitizer
/// report.
package func expectNoSanitizerReport(
    _ errors: String, from child: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let line = SanitizerReport.firstLine(in: errors) else { return }
    Issue.record(ChildSanitizerReport(child: child, line: line, errors: errors), sourceLocation: sourceLocation)
}

/// A sanitizer report in a child's standard error, recorded as an error (never a plain failed
/// expectation), so the `.timingSensitive` trait never runs the test again after one.
package struct ChildSanitizerReport: Error, CustomStringConvertible {
    package var child: String
    package var line: String
    package var errors: String

    package var description: String {
        "\(child) printed a sanitizer report (\(line)); its standard error:\n\(errors)"
    }
}

package enum SanitizerReport {
    /// The first line of `text` that starts or sums up a sanitizer's report: ASan's and LSan's
    /// `ERROR:`, TSan's `WARNING:`, any `SUMMARY: …Sanitizer`, UBSan's `runtime error:`.
    package static func firstLine(in text: String) -> String? {
        text.split(whereSeparator: \.isNewline).first { line in
            line.contains("ERROR: AddressSanitizer") || line.contains("ERROR: LeakSanitizer")
                || line.contains("WARNING: ThreadSanitizer") || line.contains("runtime error:")
                || line.contains(/SUMMARY: [A-Za-z]*Sanitizer/)
        }.map(String.init)
    }
}
