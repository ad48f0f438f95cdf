import Foundation
import Stallwatch

/// One benchmark result, printed as one JSON object per line.
struct Result {
    var name: String
    var value: Double
    var unit: String
    var peer: String? = nil
    var peerValue: Double? = nil
    /// How many times better ours is than the peer (>1: ours is better), given which way is better.
    var ratio: Double? = nil
    var goal: String? = nil
    /// More figures of the same result, each a number.
    var fields: [(name: String, value: Double)] = []

    func printLine() {
        var parts: [String] = [
            "\"name\":\(quote(name))", "\"value\":\(format(value))", "\"unit\":\(quote(unit))",
        ]
        if let peer { parts.append("\"peer\":\(quote(peer))") }
        if let peerValue { parts.append("\"peer_value\":\(format(peerValue))") }
        if let ratio { parts.append("\"ratio\":\(format(ratio))") }
        if let goal { parts.append("\"goal\":\(quote(goal))") }
        for field in self.fields { parts.append("\(quote(field.name)):\(format(field.value))") }
        FileHandle.standardOutput.write(Data(("{" + parts.joined(separator: ",") + "}\n").utf8))
    }

    private func quote(_ s: String) -> String {
        "\""
            + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            + "\""
    }

    private func format(_ v: Double) -> String {
        v.isFinite ? String(format: "%.3f", v) : "null"
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
func nowNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))]
}

func median(_ values: [Double]) -> Double { percentile(values, 0.5) }

extension Result {
    /// `name.p50` and `name.p99` of `values` against the peer's `peerValues` (lower is better),
    /// with their goals: one line each.
    static func percentiles(
        _ name: String, _ values: [Double], unit: String = "us", peer: String, _ peerValues: [Double],
        goals: (p50: String?, p99: String?) = (nil, nil)
    ) {
        for (label, q, goal) in [("p50", 0.5, goals.p50), ("p99", 0.99, goals.p99)] {
            let (ours, theirs) = (percentile(values, q), percentile(peerValues, q))
            Result(
                name: "\(name).\(label)", value: ours, unit: unit, peer: peer, peerValue: theirs, ratio: theirs / ours,
                goal: goal
            ).printLine()
        }
    }
}

/// Runs this executable again with `arguments` and returns the first number it prints: for
/// peers that must own the main thread (`dispatchMain()` never returns).
func runPeer(_ arguments: [String]) throws -> Double {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    guard process.terminationStatus == 0, let value = Double(text) else {
        throw BenchError(
            "peer \(arguments.joined(separator: " ")) failed: status \(process.terminationStatus), output \(text)"
        )
    }
    return value
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A mutable box the loop thread and the benchmark share; the loop thread is the only writer
/// while a run lasts, the main thread reads it after.
final class Box<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
