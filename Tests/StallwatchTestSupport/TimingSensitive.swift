// A test that times real stalls or real scheduling may run a second time, once, in this process,
// and only when its first attempt failed on a plain expectation; the retry is printed as one
// `RETRIED:` line, which scripts/test.sh and scripts/sanitize.sh count. Never after a thrown
// error, a system issue or a sanitizer report.
import CStallwatchTestSupport
import Foundation
import StallwatchCore
import Testing

/// Lets a test that times real stalls run again once when its first attempt fails.
///
/// The first attempt runs inside `withKnownIssue(isIntermittent: true)`: its failed
/// expectations (`#expect`, `#require`, `Issue.record`, a miscounted confirmation) are recorded
/// as known issues. If it had any, a `RETRIED: <Suite>.<test> — <why> — first attempt: <issues>`
/// line goes to standard error and the body runs again as usual, so a second failure fails the
/// test. A thrown error, a system issue, a misused API, an exceeded time limit or a sanitizer
/// report is never matched: the test fails on the first attempt. Swift Testing calls the scope
/// once per test case (arguments) of a test function.
package struct TimingSensitive: TestTrait, SuiteTrait, TestScoping {
    /// Why the test's timing can fail on a loaded machine without the code being wrong.
    package var reason: String

    package init(reason: String) { self.reason = reason }

    package var isRecursive: Bool { true }

    package var comments: [Comment] { [Comment(rawValue: "timing-sensitive: \(reason)")] }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let reportsBefore = swt_sanitizer_reports()
        let firstAttempt = Locked<(soft: [String], hard: Bool)>(([], false))
        try await withKnownIssue("first attempt of a timing-sensitive test", isIntermittent: true) {
            try await function()
        } matching: { issue in
            guard issue.isFailure else { return false }
            let retriable = Self.isRetriable(issue) && swt_sanitizer_reports() == reportsBefore
            firstAttempt.withLock {
                if retriable { $0.soft.append(Self.oneLine(issue.description)) } else { $0.hard = true }
            }
            return retriable
        }
        let (soft, hard) = firstAttempt.withLock { $0 }
        guard !soft.isEmpty, !hard, swt_sanitizer_reports() == reportsBefore else { return }
        let name = Self.name(of: test)
        FileHandle.standardError.write(
            Data("RETRIED: \(name) — \(reason) — first attempt: \(soft.joined(separator: " | "))\n".utf8))
        try await function()
    }

    /// Failed expectations only: what a stall timed on a loaded machine can get wrong.
    static func isRetriable(_ issue: Issue) -> Bool {
        switch issue.kind {
        case .expectationFailed, .unconditional, .confirmationMiscounted: true
        default: false
        }
    }

    /// `Suite.test`, as the scripts list it (no argument labels).
    static func name(of test: Test) -> String {
        test.id.nameComponents.map { $0.split(separator: "(", maxSplits: 1).first.map(String.init) ?? $0 }
            .joined(separator: ".")
    }

    /// One line of at most 400 characters: the summary must stay one line per retry.
    static func oneLine(_ text: String) -> String {
        let flat = text.split(whereSeparator: \.isNewline).joined(separator: " / ")
        return flat.count > 400 ? String(flat.prefix(400)) + "…" : flat
    }
}

extension Trait where Self == TimingSensitive {
    /// Lets this test run again once if its first attempt fails an expectation; `reason` says
    /// which real timing it depends on.
    package static func timingSensitive(_ reason: String) -> Self { TimingSensitive(reason: reason) }
}
