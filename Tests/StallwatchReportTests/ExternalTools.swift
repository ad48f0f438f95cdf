// The outside tools the export tests check their formats with: Python with duckdb, chdb and
// opentelemetry-proto in the venv scripts/install-deps.sh makes, and Go's pprof.
import Foundation

enum ExternalTools {
    /// The repository root (for tools/fleet).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The venv's Python: `STALLWATCH_VENV`, else `~/.cache/stallwatch-venv` (install-deps.sh).
    static let python: String? = {
        let environment = ProcessInfo.processInfo.environment
        let venv =
            environment["STALLWATCH_VENV"]
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.cache/stallwatch-venv"
        let path = venv + "/bin/python3"
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }()

    /// Whether the venv's Python can import `module`.
    static func pythonHas(_ module: String) -> Bool {
        guard let python else { return false }
        return run(python, ["-c", "import \(module)"]).status == 0
    }

    static let go: String? = ["/usr/bin/go", "/usr/lib/go/bin/go", "/usr/local/go/bin/go"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    static let hasDuckDB = pythonHas("duckdb")
    static let hasChDB = pythonHas("chdb")
    static let hasOTLPProto = pythonHas("opentelemetry.proto.collector.trace.v1.trace_service_pb2")

    struct Run {
        var status: Int32
        var output: String
        var error: String
    }

    /// Runs `executable` with `arguments` and waits; both streams captured.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        // Both streams to files, so neither can fill a pipe while we wait.
        let base = NSTemporaryDirectory() + "stallwatch-tool-" + UUID().uuidString
        _ = FileManager.default.createFile(atPath: base + ".out", contents: nil)
        _ = FileManager.default.createFile(atPath: base + ".err", contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: base + ".out")
            try? FileManager.default.removeItem(atPath: base + ".err")
        }
        guard let out = FileHandle(forWritingAtPath: base + ".out"),
            let err = FileHandle(forWritingAtPath: base + ".err")
        else { return Run(status: -1, output: "", error: "cannot create \(base)") }
        process.standardOutput = out
        process.standardError = err
        do { try process.run() } catch { return Run(status: -1, output: "", error: "\(error)") }
        process.waitUntilExit()
        try? out.close()
        try? err.close()
        return Run(
            status: process.terminationStatus,
            output: (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? "",
            error: (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? "")
    }
}
