// Running the package's built products and other programs as child processes from the tests:
// their exit status and both output streams, with a sanitizer report in a child's standard error
// failing the test that started it (the products are built with the test's sanitizer and inherit
// its options, scripts/sanitize.sh).
import Foundation
import Testing

/// The path of an executable built with the tests (`stallwatch`, the samples, the test host):
/// in the directory of the running test binary, or of a bundle directory holding it.
package func builtProduct(_ name: String) -> String {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    var directory = executable.deletingLastPathComponent()
    while directory.path != "/" && !FileManager.default.isExecutableFile(atPath: directory.path + "/" + name) {
        directory.deleteLastPathComponent()
    }
    let found = directory.path == "/" ? executable.deletingLastPathComponent() : directory
    return found.path + "/" + name
}

/// What a child process did: its exit status and both output streams. Its description (for a
/// check's comment) is the status and the standard error.
package struct ChildRun: Sendable, CustomStringConvertible {
    package var name: String
    package var exitCode: Int32
    package var output: String
    package var error: String
    /// Whether it was killed, with everything it started, for outliving its timeout.
    package var timedOut = false

    package var description: String {
        let ending = timedOut ? "was killed at its timeout" : "exited \(exitCode)"
        return "\(name) \(ending); its standard error:\n\(error)"
    }

    package init(name: String, exitCode: Int32, output: String, error: String, timedOut: Bool = false) {
        self.name = name
        self.exitCode = exitCode
        self.output = output
        self.error = error
        self.timedOut = timedOut
    }

    /// Runs `executable` with `arguments` and exactly `environment` (nil: this process's) and
    /// waits. A sanitizer report in its standard error is recorded as an issue. With a
    /// `timeout`, it runs under `/usr/bin/timeout` (when there is one), which sends SIGKILL to it
    /// and everything it started when the time is up: a hung child or grandchild fails its test
    /// instead of blocking the suite.
    package init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        timeout: Duration? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let process = Process()
        let killer = "/usr/bin/timeout"
        if let timeout, FileManager.default.isExecutableFile(atPath: killer) {
            // SIGKILL: the test runner may have SIGTERM ignored, which its children inherit.
            process.executableURL = URL(fileURLWithPath: killer)
            process.arguments = ["-s", "KILL", "\(timeout.components.seconds)s", executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        if let environment { process.environment = environment }
        let streams = try runToEnd(process)
        name = URL(fileURLWithPath: executable).lastPathComponent
        exitCode = process.terminationStatus
        // timeout's SIGKILL goes to its own process group, timeout included.
        timedOut = timeout != nil && process.terminationReason == .uncaughtSignal && exitCode == SIGKILL
        output = streams.output
        error = streams.error
        expectNoSanitizerReport(error, from: name, sourceLocation: sourceLocation)
    }
}

/// Runs the built product `name` (`builtProduct(_:)`) with `arguments` and `environment` added
/// to this process's, and waits. A sanitizer report in its standard error is recorded as an issue.
package func runProduct(
    _ name: String, _ arguments: [String], environment: [String: String] = [:], timeout: Duration? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> ChildRun {
    try ChildRun(
        builtProduct(name), arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
        timeout: timeout, sourceLocation: sourceLocation)
}

/// Starts `process` with its standard output and error on pipes and waits for it to exit; both
/// streams are read at once, so neither pipe fills while the other is read.
package func runToEnd(_ process: Process) throws -> (output: String, error: String) {
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    let errorData = CollectedData()
    let group = DispatchGroup()
    DispatchQueue.global().async(group: group) {
        errorData.set(error.fileHandleForReading.readDataToEndOfFile())
    }
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    return (String(decoding: outputData, as: UTF8.self), String(decoding: errorData.get(), as: UTF8.self))
}

/// Bytes one thread reads and another takes.
private final class CollectedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    func set(_ data: Data) { lock.withLock { self.data = data } }
    func get() -> Data { lock.withLock { data } }
}

/// A child process read while it runs: standard output on a pipe, standard error in a
/// temporary file (a pipe nobody reads could fill and stop the child).
package final class StartedChild {
    package let process: Process
    package let output: Pipe
    package let name: String
    private let errorPath = NSTemporaryDirectory() + "stallwatch-child-\(UUID().uuidString).err"

    package init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        output = Pipe()
        process.standardOutput = output
        name = URL(fileURLWithPath: executable).lastPathComponent
        guard FileManager.default.createFile(atPath: errorPath, contents: nil),
            let errors = FileHandle(forWritingAtPath: errorPath)
        else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: errorPath]) }
        process.standardError = errors
        defer { try? errors.close() }
        try process.run()
    }

    deinit { try? FileManager.default.removeItem(atPath: errorPath) }

    /// Reads standard output until `marker` appears or the child closes it; returns what it read.
    package func read(until marker: String) -> String {
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains(marker) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        return String(decoding: seen, as: UTF8.self)
    }

    /// Waits for the child and returns its run (`output`: what is left of standard output). A
    /// sanitizer report in its standard error is recorded as an issue.
    package func finish(sourceLocation: SourceLocation = #_sourceLocation) -> ChildRun {
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        expectNoSanitizerReport(errors, from: name, sourceLocation: sourceLocation)
        return ChildRun(
            name: name, exitCode: process.terminationStatus, output: String(decoding: rest, as: UTF8.self),
            error: errors)
    }
}
