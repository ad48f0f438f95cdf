// `stallwatch-nio-bench --record [ROUNDS] [SECONDS]`: what `stallwatch record` costs a swift-nio
// server that never heard of Stallwatch. The server is `NIOBenchServer` (beside this executable),
// a process of its own, run plain and as `stallwatch record --output TRACE -- NIOBenchServer`,
// in alternating rounds of the same run, with this process's 2 closed-loop loopback clients;
// requests/s and the server process's CPU time per request (every thread of it: its loops and,
// recorded, the preload library's), medians, the recorded as a ratio of the plain (and
// `paired_ratio`, the median of each round's recorded figure over its plain peer's). The CLI is
// `STALLWATCH_CLI` (scripts/nio-integration.sh bench-record sets it to the release build, whose
// preload library and shim are beside it). After each recorded round `stallwatch report --json`
// must list the server's loops (`NIO-ELT-*`) as watched: a recording that timed none fails the
// bench, so the ratio is never that of an unwatched run; the recorded line names the loops
// watched and counts the recordings' stalls (all rounds: a loaded machine preempts a loop past
// the budget now and then). BENCH_VERBOSE=1 prints each round.
import Foundation
import NIOTestServer

/// Why the recorded bench cannot go on.
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
}

/// A server process until `stop()`: its standard input is a pipe whose end stops it.
final class ServerProcess {
    private let process = Process()
    private let input = Pipe()
    /// The port it listens on and its own process (record's child when recorded).
    let port: Int
    let pid: Int32

    init(command: [String]) throws {
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw BenchFailure(description: "\(command) ended before it listened") }
            line += chunk
        }
        let fields = String(decoding: line, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        guard fields.count >= 2, let port = Int(fields[0]), let pid = Int32(fields[1]) else {
            throw BenchFailure(description: "\(command) printed \(String(decoding: line, as: UTF8.self))")
        }
        (self.port, self.pid) = (port, pid)
    }

    /// The CPU time of every thread of the server process so far, and of the recorder's own
    /// threads among them (named `stallwatch…`: its watchdog and trace writer), in ns (/proc's
    /// schedstat).
    func cpuNanoseconds() -> (all: Double, recorder: Double) {
        let tasks = "/proc/\(pid)/task"
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? []
        return threads.reduce((0, 0)) { total, thread in
            let stat = (try? String(contentsOfFile: "\(tasks)/\(thread)/schedstat", encoding: .utf8)) ?? ""
            let name = (try? String(contentsOfFile: "\(tasks)/\(thread)/comm", encoding: .utf8)) ?? ""
            let cpu = stat.split(separator: " ").first.flatMap { Double($0) } ?? 0
            return (total.all + cpu, total.recorder + (name.hasPrefix("stallwatch") ? cpu : 0))
        }
    }

    /// Ends its input and waits for it; its exit status.
    func stop() throws -> Int32 {
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// What a recording watched: `LABEL (HOW)` per executor, and its stalls (`report --json`).
func watched(trace: String, cli: String) throws -> (executors: [(label: String, how: String)], stalls: Int) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: cli)
    process.arguments = ["report", "--json", trace]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0,
        let report = try JSONSerialization.jsonObject(with: data) as? [String: Any],
        let traces = report["traces"] as? [[String: Any]]
    else { throw BenchFailure(description: "stallwatch report --json \(trace) failed") }
    let executors = traces.flatMap { ($0["watched"] as? [[String: Any]]) ?? [] }.map {
        (label: $0["label"] as? String ?? "", how: $0["how"] as? String ?? "")
    }
    return (executors, traces.reduce(0) { $0 + ($1["stalls"] as? Int ?? 0) })
}

/// One round of one variant: requests/s, the server's CPU µs per request (all of it, and its
/// recorder threads' share), and what was watched.
func serve(
    recorded: Bool, seconds: Double, server serverPath: String, cli: String, trace: String
) throws -> (rate: Double, cpu: Double, recorderCPU: Double, loops: [String], stalls: Int) {
    let command = recorded ? [cli, "record", "--output", trace, "--", serverPath] : [serverPath]
    let server = try ServerProcess(command: command)
    let clients = (0..<2).map { _ in LoadGenerator(port: server.port, pause: 0) }
    let started = Date()
    let cpuBefore = server.cpuNanoseconds()
    Thread.sleep(forTimeInterval: seconds)
    let requests = clients.map { $0.stop() }.reduce(0, +)
    let cpuAfter = server.cpuNanoseconds()
    let cpu = (cpuAfter.all - cpuBefore.all) / 1000 / Double(max(requests, 1))
    let recorderCPU = (cpuAfter.recorder - cpuBefore.recorder) / 1000 / Double(max(requests, 1))
    let rate = Double(requests) / Date().timeIntervalSince(started)
    let status = try server.stop()
    guard status == 0 else { throw BenchFailure(description: "\(command) exited with \(status)") }
    guard recorded else { return (rate, cpu, recorderCPU, [], 0) }
    guard FileManager.default.fileExists(atPath: trace) else {
        throw BenchFailure(description: "the recorded server wrote no trace \(trace): nothing was watched")
    }
    let (executors, stalls) = try watched(trace: trace, cli: cli)
    let loops = executors.filter { $0.label.hasPrefix("NIO-ELT") && ["epoll", "poll", "select"].contains($0.how) }
    // BENCH_REQUIRE_LOOPS=0: what recording costs without the loops (STALLWATCH_LOOPS=0), for
    // diagnosis only.
    guard !loops.isEmpty || ProcessInfo.processInfo.environment["BENCH_REQUIRE_LOOPS"] == "0" else {
        throw BenchFailure(
            description: "the recorded server's loops were not watched: \(trace) watched "
                + (executors.isEmpty
                    ? "nothing"
                    : executors.map { $0.label.isEmpty ? $0.how : "\($0.label) (\($0.how))" }.joined(separator: ", ")))
    }
    return (rate, cpu, recorderCPU, loops.map { "\($0.label) (\($0.how) loop)" }, stalls)
}

/// The recorded bench: plain and recorded rounds in turn, one JSON line per result.
func benchRecorded(rounds: Int, seconds: Double) throws {
    let environment = ProcessInfo.processInfo.environment
    guard let cli = environment["STALLWATCH_CLI"], FileManager.default.isExecutableFile(atPath: cli) else {
        throw BenchFailure(description: "--record needs STALLWATCH_CLI, the stallwatch executable to record with")
    }
    let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let server = URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("NIOBenchServer")
        .path
    guard FileManager.default.isExecutableFile(atPath: server) else {
        throw BenchFailure(description: "no \(server): build the NIOBenchServer product")
    }
    let temporary = environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    let trace = "\(temporary)/stallwatch-nio-bench-\(getpid()).swtrace"
    defer {
        try? FileManager.default.removeItem(atPath: trace)
        try? FileManager.default.removeItem(atPath: trace + ".d")
    }
    var plain: [(rate: Double, cpu: Double)] = []
    var recorded: [(rate: Double, cpu: Double)] = []
    var recorderCPU: [Double] = []
    var loops: Set<String> = []
    var stalls: [Int] = []
    for round in 0..<rounds {
        // Alternating which goes first, so a machine that speeds up or slows down favours neither.
        for isRecorded in round % 2 == 0 ? [false, true] : [true, false] {
            let result = try serve(recorded: isRecorded, seconds: seconds, server: server, cli: cli, trace: trace)
            if environment["BENCH_VERBOSE"] != nil {
                let (cpu, own) = (String(format: "%.2f", result.cpu), String(format: "%.3f", result.recorderCPU))
                let line =
                    "round \(round) \(isRecorded ? "recorded" : "plain"): \(Int(result.rate)) requests/s, "
                    + "\(cpu) µs CPU/request (recorder threads \(own)), \(result.stalls) stalls\n"
                FileHandle.standardError.write(Data(line.utf8))
            }
            if isRecorded {
                recorded.append((result.rate, result.cpu))
                recorderCPU.append(result.recorderCPU)
                loops.formUnion(result.loops)
                stalls.append(result.stalls)
            } else {
                plain.append((result.rate, result.cpu))
            }
        }
    }
    let (rateRecorded, ratePlain) = (median(recorded.map(\.rate)), median(plain.map(\.rate)))
    let (cpuRecorded, cpuPlain) = (median(recorded.map(\.cpu)), median(plain.map(\.cpu)))
    // Each round's recorded figure over its plain peer's, run just before or after it: what else
    // loads the machine moves both of a pair alike more often than two rounds apart.
    let pairedRate = median(zip(recorded, plain).map { $0.rate / max($1.rate, 1) })
    let pairedCPU = median(zip(recorded, plain).map { $0.cpu / max($1.cpu, 0.001) })
    let watchedLoops = loops.sorted().joined(separator: ", ")
    print(
        """
        {"name":"nio.requests_per_second.plain","value":\(String(format: "%.0f", ratePlain)),"unit":"requests/s"}
        {"name":"nio.requests_per_second.recorded","value":\(String(format: "%.0f", rateRecorded)),\
        "unit":"requests/s","peer":"the same server run plain","peer_value":\(String(format: "%.0f", ratePlain)),\
        "ratio":\(String(format: "%.3f", rateRecorded / max(ratePlain, 1))),"goal":">= 0.97",\
        "paired_ratio":\(String(format: "%.3f", pairedRate)),"watched":"\(watchedLoops)","stalls":\(stalls.reduce(0, +))}
        {"name":"nio.server_cpu_per_request.recorded","value":\(String(format: "%.2f", cpuRecorded)),"unit":"us",\
        "peer":"the same server run plain","peer_value":\(String(format: "%.2f", cpuPlain)),\
        "ratio":\(String(format: "%.3f", cpuRecorded / max(cpuPlain, 0.001))),\
        "paired_ratio":\(String(format: "%.3f", pairedCPU)),\
        "recorder_threads_us":\(String(format: "%.3f", median(recorderCPU)))}
        """)
}
