/// Stops the process with `message` unless `condition` holds: what `precondition` does, except
/// that the message survives an optimised build (`precondition` keeps only "precondition
/// failure" there, so a user of a release build never learned what they got wrong). For the
/// API misuse every public entry point checks: the message names the call and the value.
///
/// Pure; any thread.
@inlinable
@inline(__always)
package func require(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID,
    line: UInt = #line
) {
    if !condition() { requirementFailed(message(), file: file, line: line) }
}

/// The failure of `require`, out of line so the check stays small where it is inlined.
@usableFromInline
@inline(never)
package func requirementFailed(_ message: String, file: StaticString, line: UInt) -> Never {
    fatalError(message, file: file, line: line)
}
