// A loopback TCP echo server on two event loops (a thread-per-loop executor standing in for
// swift-nio), watched by one HeartbeatMonitor. One request handler blocks 60 ms reading a
// slow pipe (an I/O stall on loop-1); then both loops idle for a second and the program counts
// how often their threads woke. Records to $STALLWATCH_TRACE when set. swift run EventLoopServer
// Flags: --stall-ms N (60), --idle-s S (1).
import Foundation
import Glibc
import Stallwatch
import StallwatchAnalysis
import StallwatchCore

let arguments = CommandLine.arguments
func value(_ flag: String, _ fallback: Double) -> Double {
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return fallback }
    return Double(arguments[index + 1]) ?? fallback
}
let stallMilliseconds = value("--stall-ms", 60)
let idleSeconds = value("--idle-s", 1)

let loops = (0..<2).map { EventLoop(name: "loop-\($0)") }
for loop in loops { loop.start() }

// The adoption: one monitor, every loop watched by its `execute`.
let monitor = HeartbeatMonitor()
for loop in loops { monitor.watch(label: loop.name) { loop.execute($0) } }
let classifier = Classifier()
let found = Locked<[String]>([])
let report: @Sendable (Stall) -> Void = { stall in
    let category = classifier.breakdown(of: stall).dominant?.rawValue ?? "?"
    let culprit = stall.samples.lazy.flatMap(\.frames).first { $0.symbol?.contains("lookUpSlowRecord") == true }
    let line = String(
        format: "stall on %@: %.1f ms, %@, culprit %@", stall.callout.label ?? "?",
        Double(stall.duration?.nanoseconds ?? 0) / 1e6, category, culprit?.symbol ?? "not in the stack")
    found.withLock { $0.append(line) }
}
var recorder: HeartbeatRecorder?
if let path = ProcessInfo.processInfo.environment["STALLWATCH_TRACE"], !path.isEmpty {
    recorder = try HeartbeatRecorder(path: path, monitor: monitor)
    recorder!.onStallEnded = report
    try recorder!.start()
} else {
    monitor.onStallEnded = report
    try monitor.start()
}

/// The culprit: the handler waits for a record from a slow pipe, on the loop thread.
@inline(never) func lookUpSlowRecord() -> String {
    var fds: [Int32] = [0, 0]
    pipe(&fds)
    let writer = fds[1]
    Thread.detachNewThread {
        usleep(useconds_t(stallMilliseconds * 1000))
        _ = write(writer, "record", 6)
        close(writer)
    }
    var buffer = [UInt8](repeating: 0, count: 16)
    let n = read(fds[0], &buffer, buffer.count)
    close(fds[0])
    return String(decoding: buffer[..<max(n, 0)], as: UTF8.self)
}

// The server: loop-0 accepts; connection N is served by loop N % 2.
let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
var address = sockaddr_in()
address.sin_family = sa_family_t(AF_INET)
address.sin_addr.s_addr = inet_addr("127.0.0.1")
withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        _ = bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
    }
}
listen(listener, 8)
var length = socklen_t(MemoryLayout<sockaddr_in>.size)
withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(listener, $0, &length) }
}
let port = UInt16(bigEndian: address.sin_port)

nonisolated(unsafe) var accepted = 0
loops[0].execute {
    loops[0].register(listener) {
        let connection = accept(listener, nil, nil)
        let loop = loops[accepted % loops.count]
        accepted += 1
        loop.execute {
            loop.register(connection) {
                var buffer = [UInt8](repeating: 0, count: 64)
                let n = read(connection, &buffer, buffer.count)
                guard n > 0 else { return loop.unregister(connection) }
                var reply = Array(buffer[..<n])
                if String(decoding: reply, as: UTF8.self).hasPrefix("slow") { reply += Array(lookUpSlowRecord().utf8) }
                _ = write(connection, reply, reply.count)
            }
        }
    }
}

// The client, on the main thread.
func connectToServer() -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var server = sockaddr_in()
    server.sin_family = sa_family_t(AF_INET)
    server.sin_addr.s_addr = inet_addr("127.0.0.1")
    server.sin_port = port.bigEndian
    withUnsafePointer(to: &server) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            _ = connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    return fd
}
func request(_ fd: Int32, _ text: String) -> String {
    _ = write(fd, text, text.utf8.count)
    var buffer = [UInt8](repeating: 0, count: 64)
    let n = read(fd, &buffer, buffer.count)
    return String(decoding: buffer[..<max(n, 0)], as: UTF8.self)
}
func wakeups(_ threadPath: String) -> Int {
    guard let status = try? String(contentsOfFile: threadPath + "/status", encoding: .utf8) else { return -1 }
    let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
    return line.flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? -1
}

usleep(300_000)  // the monitor learns the loops' threads from their first heartbeats
let fast = connectToServer()
let slow = connectToServer()
print("echo:", request(fast, "hello"))
print("echo:", request(slow, "slow"))
usleep(300_000)
let before = loops.map { wakeups($0.threadPath) }
usleep(useconds_t(idleSeconds * 1_000_000))
let woke = zip(loops, before).map { "\($0.name) woke \(wakeups($0.threadPath) - $1) times" }
print(String(format: "idle %.2f s: ", idleSeconds) + woke.joined(separator: ", "))
if let recorder { recorder.stop() } else { monitor.stop() }
for line in found.withLock({ $0 }) { print(line) }
let statistics = monitor.statistics
print(
    "heartbeats sent \(statistics.heartbeatsSent), run \(statistics.heartbeatsRun), idle checks \(statistics.idleChecks), "
        + "watchdog wake-ups \(statistics.watchdogWakeups)")
