// What watching a real swift-nio server costs it: requests/s of a NIOHTTP1 server on 2 event
// loops under a closed-loop loopback load (2 connections, each request sent as soon as the last
// answer arrived), with a HeartbeatMonitor watching both loops and without, in alternating
// rounds of the same run. One JSON line per result, the monitored rate as a ratio of the
// unmonitored peer. `stallwatch-nio-bench [ROUNDS] [SECONDS]` (6 rounds of 2 s), or
// `scripts/nio-integration.sh bench [ROUNDS] [SECONDS]` (release build). BENCH_SELF=0 and
// BENCH_PERF=0 turn the monitor's self-sampling and perf sampling off, BENCH_SELF_PERIOD_US=N
// sets the self-sampling period (500 µs by default); BENCH_VERBOSE=1 prints
// the monitor's counters after each monitored round.
import Foundation
import NIOTestServer
import Stallwatch
import StallwatchNIO

let arguments = CommandLine.arguments.dropFirst().compactMap(Double.init)
let rounds = Int(arguments.first ?? 6)
let seconds = arguments.dropFirst().first ?? 2

/// Requests per second over `seconds` with `connections` closed-loop clients.
func rate(monitored: Bool) throws -> Double {
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
    Thread.sleep(forTimeInterval: seconds)
    let requests = clients.map { $0.stop() }.reduce(0, +)
    if monitored && environment["BENCH_VERBOSE"] != nil {
        let statistics = monitor.statistics
        FileHandle.standardError.write(
            Data(
                "stalls \(statistics.stalls), captures \(statistics.captures), self \(statistics.selfSamples), heartbeats \(statistics.heartbeatsRun)\n"
                    .utf8))
    }
    return Double(requests) / Date().timeIntervalSince(started)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

var with: [Double] = []
var without: [Double] = []
for round in 0..<rounds {
    // Alternating which goes first, so a machine that speeds up or slows down favours neither.
    for monitored in round % 2 == 0 ? [false, true] : [true, false] {
        let value = try rate(monitored: monitored)
        if monitored { with.append(value) } else { without.append(value) }
    }
}
let ratio = median(with) / max(median(without), 1)
print(
    """
    {"name":"nio.requests_per_second.unmonitored","value":\(String(format: "%.0f", median(without))),"unit":"requests/s"}
    {"name":"nio.requests_per_second.monitored","value":\(String(format: "%.0f", median(with))),"unit":"requests/s",\
    "peer":"the same server unmonitored","peer_value":\(String(format: "%.0f", median(without))),\
    "ratio":\(String(format: "%.3f", ratio)),"goal":">= 0.97"}
    """)
