// Running the `stallwatch` command line in-process, for the CLI's tests and the report's (which
// reach the report through its commands). Apart from StallwatchTestSupport because it calls into
// the `stallwatch` executable's module, which SwiftPM links only into tests: the benchmark, which
// links StallwatchTestSupport, could not link this.
import stallwatch

/// Runs the CLI in-process with captured streams.
package struct CLIRun {
    package var exitCode: Int32
    package var output: String
    package var error: String

    package init(
        _ arguments: [String], environment: [String: String] = [:], terminal: Bool = false, input: [UInt8] = []
    ) {
        let output = BufferSink()
        let error = BufferSink()
        let context = CommandContext(
            standardOutput: output, standardError: error, outputIsTerminal: terminal, errorIsTerminal: false,
            environment: environment, standardInput: .bytes(input))
        exitCode = StallwatchCLI.run(arguments, context: context).rawValue
        self.output = output.text
        self.error = error.text
    }
}
