import Foundation
import Glibc
import StallwatchCore

/// What Stallwatch has to tell the person running a program (a bad variable, a trace it cannot
/// write, a main queue that never runs): the one place that says it. Under `stallwatch record`
/// (`STALLWATCH_MESSAGES` names a file) each message is appended there, naming the process, and
/// `record` prints them all on its own stderr when the program ends, so the program's own
/// output stays exactly its own; otherwise it goes to stderr. Every line begins `stallwatch:`.
/// Any thread.
package enum Messages {
    /// Says `message` (without the `stallwatch:` prefix; each of its lines gets it).
    package static func say(_ message: String) {
        let lines = message.split(separator: "\n", omittingEmptySubsequences: false)
        let rest = lines.dropFirst().map { "stallwatch: \($0)\n" }.joined()
        guard let path = destination else {
            FileHandle.standardError.write(Data("stallwatch: \(lines.first ?? "")\n\(rest)".utf8))
            return
        }
        // One write with O_APPEND: the lines of the processes of a tree do not interleave.
        let line = "stallwatch: \(process): \(lines.first ?? "")\n\(rest)"
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        _ = line.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
        close(fd)
    }

    /// The environment variable `record` sets to the file the messages go to.
    package static let variable = StallwatchEnvironment.messages

    private static let destination: String? = {
        guard let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty else { return nil }
        return path
    }()

    /// `name (pid N)`, the process as a summary names it.
    private static let process: String = {
        let comm = (try? String(contentsOfFile: "/proc/self/comm", encoding: .utf8)) ?? "?"
        return "\(comm.trimmingCharacters(in: .whitespacesAndNewlines)) (pid \(getpid()))"
    }()
}
