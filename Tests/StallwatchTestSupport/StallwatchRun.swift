// The built `stallwatch` run as a child process, for every test that records or reads traces
// the way a user does.
import Foundation
import Testing

/// Where the built `stallwatch` is: next to the test bundle.
package enum BinaryRun {
    package static var binary: String { builtProduct("stallwatch") }

    /// The directory the built products sit in (`stallwatch`, the samples, the test host).
    package static var productDirectory: String { URL(fileURLWithPath: binary).deletingLastPathComponent().path }
}

/// The built `stallwatch` run with `arguments` (and `environment`, else this process's).
package func runStallwatch(
    _ arguments: [String], environment: [String: String]? = nil, sourceLocation: SourceLocation = #_sourceLocation
) throws -> ChildRun {
    try ChildRun(BinaryRun.binary, arguments, environment: environment, sourceLocation: sourceLocation)
}

/// Runs `stallwatch arguments` and expects it to exit `code`; shows its standard error if not.
package func expectExit(_ code: Int32, _ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws
{
    let run = try runStallwatch(arguments, sourceLocation: sourceLocation)
    #expect(run.exitCode == code, "stallwatch \(arguments): \(run)", sourceLocation: sourceLocation)
}
