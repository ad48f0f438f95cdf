// A failed check inside an exit test's child reaches the parent with its message.
import Testing

/// In an exit test's child: `#expect(condition, message)` as an issue that keeps its message.
/// Swift Testing forwards a child's failed `#expect` as a bare "Issue recorded", without its
/// message or values, but an `Issue.record` with its comment.
func childExpect(
    _ condition: Bool, _ message: @autoclosure () -> String = "", sourceLocation: SourceLocation = #_sourceLocation
) {
    guard !condition else { return }
    let text = message()
    Issue.record(Comment(rawValue: text.isEmpty ? "expectation failed" : text), sourceLocation: sourceLocation)
}
