// Which sanitizer the tests were built with, so a test can skip itself under one.
import CStallwatchTestSupport

/// The sanitizer this test binary was built with (`swift test --sanitize=…`), for tests that
/// cannot run under one (`.disabled(if: Sanitizer.address, "why")`). Known at compile time:
/// Swift has no `#if` for sanitizers, but SwiftPM compiles the C support target with the same
/// `-fsanitize=` flag and clang's `__has_feature` says which. CStallwatchSamplerTests checks
/// that it agrees with the runtime.
package enum Sanitizer {
    package static let address = swt_built_with_address_sanitizer() != 0
    package static let thread = swt_built_with_thread_sanitizer() != 0
    /// Either of them: for checks of a file format, not of memory or races.
    package static var any: Bool { address || thread }
}
