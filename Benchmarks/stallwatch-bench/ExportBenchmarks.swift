import Foundation
import StallwatchCore

#if canImport(Glibc)
    import Glibc
#endif

/// `stallwatch-bench export [STALLS] [MEGABYTES]`: each export format and `report --html`
/// against plain `report` on the same trace, as the built `stallwatch` CLI runs them (child
/// processes: wall time, and the child's peak resident memory from `wait4`'s rusage). Two
/// traces: one of 100,000 (or STALLS) stalls, and a full-mode one of about 250 (or MEGABYTES)
/// MiB, mostly callout records.
enum ExportBenchmarks {
    static let formats = ["chrome", "folded", "speedscope", "jsonl", "otlp-json", "pprof"]
    /// How long one command may run before it is killed and counted as not done.
    static let timeoutSeconds = 900.0

    static func run(stalls: Int, megabytes: Int) throws {
        let bench = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let cli = bench.deletingLastPathComponent().appendingPathComponent("stallwatch").path
        guard access(cli, X_OK) == 0 else {
            throw BenchError("\(cli) not found: build it first (swift build -c release --product stallwatch)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-export-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        // Each trace is made by a child process (`export-trace`): a child's peak memory starts
        // from this process's (the kernel carries it over when the child is spawned), so this
        // one stays small.
        for (label, size) in [("stalls", stalls), ("full", megabytes)] {
            let path = directory.appendingPathComponent("\(label).swtrace").path
            _ = try measure(bench.path, ["export-trace", label, String(size), path])
            Result(name: "export.\(label).trace_size", value: Double(fileSize(path)) / 1_048_576, unit: "MiB")
                .printLine()
            let output = directory.appendingPathComponent("out").path
            // The peer: plain `report`, best of three (it is short, and the machine is shared).
            let report = try (0..<3).map { _ in try measure(cli, ["report", path]) }.min { $0.seconds < $1.seconds }!
            Result(name: "export.\(label).report.seconds", value: report.seconds, unit: "s").printLine()
            Result(name: "export.\(label).report.memory", value: report.mebibytes, unit: "MiB").printLine()
            var commands = formats.map { (format: $0, arguments: ["export", path, "--format", $0, "-o", output]) }
            commands.append((format: "html", arguments: ["report", path, "--html", output]))
            for command in commands {
                let figure = try measure(cli, command.arguments)
                let size = fileSize(output)
                unlink(output)
                let name = "export.\(label).\(command.format)"
                Result(
                    name: name + ".time_ratio", value: figure.seconds / report.seconds, unit: "x report",
                    peer: "report", peerValue: report.seconds, goal: "<= 5",
                    fields: [("seconds", figure.seconds), ("output_mib", Double(size) / 1_048_576)]
                        + (figure.done ? [] : [("timed_out", 1)])
                ).printLine()
                Result(
                    name: name + ".memory_ratio", value: figure.mebibytes / report.mebibytes, unit: "x report",
                    peer: "report", peerValue: report.mebibytes, goal: "<= 2", fields: [("mib", figure.mebibytes)]
                ).printLine()
            }
            unlink(path)
        }
        // The floor of every child's figure: this process's own peak.
        var own = rusage()
        getrusage(RUSAGE_SELF.rawValue, &own)
        Result(name: "export.bench_memory", value: Double(own.ru_maxrss) / 1024, unit: "MiB").printLine()
    }

    /// `export-trace stalls|full SIZE PATH`: writes one of the bench's traces.
    static func writeTrace(_ kind: String, size: Int, to path: String) throws {
        let bytes = kind == "stalls" ? ExportTraces.manyStalls(size) : ExportTraces.fullMode(megabytes: size)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    struct Figure {
        var seconds: Double
        var mebibytes: Double
        /// False when the command ran out of time and was killed.
        var done: Bool
    }

    /// Runs `cli arguments` with stdout and stderr to /dev/null: its wall time and peak RSS
    /// (at least this process's own peak, which the kernel carries over to the child).
    static func measure(_ cli: String, _ arguments: [String]) throws -> Figure {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([cli] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let start = nowNanos()
        let spawned = posix_spawn(&pid, cli, &actions, nil, argv, environ)
        guard spawned == 0 else { throw BenchError("cannot run \(cli): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        var usage = rusage()
        var done = true
        while true {
            let waited = wait4(pid, &status, WNOHANG, &usage)
            if waited == pid { break }
            if waited < 0 && errno != EINTR { throw BenchError("wait4: \(String(cString: strerror(errno)))") }
            if done && Double(nowNanos() - start) / 1e9 > timeoutSeconds {
                kill(pid, SIGKILL)
                done = false
            }
            usleep(2_000)
        }
        let seconds = Double(nowNanos() - start) / 1e9
        if done && !(status & 0x7f == 0 && (status >> 8) & 0xff == 0) {
            throw BenchError("stallwatch \(arguments.joined(separator: " ")) failed (status \(status))")
        }
        // ru_maxrss is in KiB on Linux.
        return Figure(seconds: seconds, mebibytes: Double(usage.ru_maxrss) / 1024, done: done)
    }
}

/// The size of the file at `path`, 0 if there is none.
func fileSize(_ path: String) -> Int {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : 0
}
