// What watching a real swift-nio server costs it: requests/s of a NIOHTTP1 server on 2 event
// loops under a closed-loop loopback load (2 connections, each request sent as soon as the last
// answer arrived), with a HeartbeatMonitor watching both loops and without, in alternating
// rounds of the same run. One JSON line per result, the monitored rate as a ratio of the
// unmonitored peer. `stallwatch-nio-bench [ROUNDS] [SECONDS]` (6 rounds of 2 s), or
// `scripts/nio-integration.sh bench [ROUNDS] [SECONDS]` (release build). BENCH_SELF=0 and
// BENCH_PERF=0 turn the monitor's self-sampling and perf sampling off, BENCH_SELF_PERIOD_US=N
// sets the self-sampling period (500 µs by default); BENCH_VERBOSE=1 prints
// the monitor's counters after each monitored round. `--record` runs the recorded bench instead
// (Recorded.swift): the same server as a program without Stallwatch, plain and under
// `stallwatch record` (`scripts/nio-integration.sh bench-record [ROUNDS] [SECONDS]`).
import Foundation
import NIOTestServer
import Stallwatch
import StallwatchNIO

let arguments = CommandLine.arguments.dropFirst().compactMap(Double.init)
let rounds = Int(arguments.first ?? 6)
let seconds = arguments.dropFirst().first ?? 2

if CommandLine.arguments.contains("--record") {
    do {
        try benchRecorded(rounds: rounds, seconds: seconds)
    } catch {
        FileHandle.standardError.write(Data("stallwatch-nio-bench: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

/// The process's CPU time so far (user + system, every thread: server, clients, monitor), in µs.
func processCPUMicros() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
}

/// Requests per second over `seconds` with 2 closed-loop clients, and the process's CPU time
/// per request (µs): on a machine others load, the rate moves with them; CPU per request less.
func rate(monitored: Bool) throws -> (rate: Double, cpu: Double) {
    let server = try Server()
    defer { server.close() }
    var configuration = HeartbeatMonitor.Configuration()
    let environment = ProcessInfo.processInfo.environment
    if environment["BENCH_SELF"] == "0" { configuration.selfSampling = false }
    if environment["BENCH_PERF"] == "0" { configuration.perfSampling = false }
    if let period = environment["BENCH_SELF_PERIOD_US"].flatMap(Int.init) {
        configuration.selfSamplingPeriod = .microseconds(period)
    }
    let monitor = HeartbeatMonitor(configuration: configuration)
    if monitored {
        monitor.watch(server.group)
        try monitor.start()
    }
    defer { if monitored { monitor.stop() } }
    let clients = (0..<2).map { _ in LoadGenerator(port: server.port, pause: 0) }
    let started = Date()
    let cpuBefore = processCPUMicros()
    Thread.sleep(forTimeInterval: seconds)
    let requests = clients.map { $0.stop() }.reduce(0, +)
    let cpu = (processCPUMicros() - cpuBefore) / Double(max(requests, 1))
    if monitored && environment["BENCH_VERBOSE"] != nil {
        let statistics = monitor.statistics
        FileHandle.standardError.write(
            Data(
                "stalls \(statistics.stalls), captures \(statistics.captures), self \(statistics.selfSamples), heartbeats \(statistics.heartbeatsRun)\n"
                    .utf8))
    }
    return (Double(requests) / Date().timeIntervalSince(started), cpu)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

var with: [(rate: Double, cpu: Double)] = []
var without: [(rate: Double, cpu: Double)] = []
for round in 0..<rounds {
    // Alternating which goes first, so a machine that speeds up or slows down favours neither.
    for monitored in round % 2 == 0 ? [false, true] : [true, false] {
        let value = try rate(monitored: monitored)
        if monitored { with.append(value) } else { without.append(value) }
    }
}
let (rateWith, rateWithout) = (median(with.map(\.rate)), median(without.map(\.rate)))
let (cpuWith, cpuWithout) = (median(with.map(\.cpu)), median(without.map(\.cpu)))
print(
    """
    {"name":"nio.requests_per_second.unmonitored","value":\(String(format: "%.0f", rateWithout)),"unit":"requests/s"}
    {"name":"nio.requests_per_second.monitored","value":\(String(format: "%.0f", rateWith)),"unit":"requests/s",\
    "peer":"the same server unmonitored","peer_value":\(String(format: "%.0f", rateWithout)),\
    "ratio":\(String(format: "%.3f", rateWith / max(rateWithout, 1))),"goal":">= 0.97"}
    {"name":"nio.cpu_per_request.monitored","value":\(String(format: "%.2f", cpuWith)),"unit":"us",\
    "peer":"the same server unmonitored","peer_value":\(String(format: "%.2f", cpuWithout)),\
    "ratio":\(String(format: "%.3f", cpuWith / max(cpuWithout, 0.001))),"goal":"<= 1.03"}
    """)
