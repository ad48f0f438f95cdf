import CStallwatchTestSupport

/// The sanitizer this test binary was built with, for tests that check a format with an outside
/// tool rather than memory (`.disabled(if: Sanitizer.address || Sanitizer.thread, "why")`);
/// the same probe as StallwatchTests' (SwiftPM builds the C support target with the same
/// `-fsanitize=` flag).
enum Sanitizer {
    static let address = swt_built_with_address_sanitizer() != 0
    static let thread = swt_built_with_thread_sanitizer() != 0
}
