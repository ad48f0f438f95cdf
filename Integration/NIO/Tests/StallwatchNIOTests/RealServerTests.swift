// A real swift-nio HTTP/1.1 server (NIOPosix's MultiThreadedEventLoopGroup, NIOHTTP1's
// pipeline) watched by one HeartbeatMonitor and recorded by a HeartbeatRecorder, as README's
// "Servers" section shows. Its handler blocks its event loop in each category once, under a
// bounded loopback load of fast requests on another connection; the decoded trace must hold
// exactly one stall per blocked request, in the right category, with the culprit on the stack.
// An idle server records nothing.
import CSQLite3
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Stallwatch
import StallwatchCore
import StallwatchNIO
import Testing

@Suite(.serialized) struct RealServerTests {
    /// The blocked requests: path, culprit function, category. Each blocks about 90 ms, five
    /// times the 16.7 ms budget.
    static let blocked: [(path: String, culprit: String, category: StallCategory)] = [
        ("/compute", "checksumOfTheBody", .compute),
        ("/pipe", "readFromTheSlowPipe", .io),
        ("/lock", "readSettingsUnderTheLock", .lockWait),
        ("/sqlite", "runTheSlowQuery", .database),
        ("/sleep", "sleepBeforeReplying", .other),
    ]

    @Test func eachBlockedHandlerIsOneStallOfItsCategoryWithItsCulprit() throws {
        let server = try Server()
        defer { server.close() }
        let path = NSTemporaryDirectory() + "nio-\(UUID().uuidString).swtrace"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let monitor = HeartbeatMonitor()
        monitor.watch(server.group)
        let recorder = try HeartbeatRecorder(path: path, monitor: monitor)
        try recorder.start()
        // Every loop has run a heartbeat (its thread is prepared for sampling) before any load.
        usleep(200_000)
        let load = LoadGenerator(port: server.port)
        let client = try HTTPClient(port: server.port)
        for request in Self.blocked {
            let reply = try client.get(request.path)
            #expect(reply == "ok \(request.path)", "\(request.path): \(reply)")
            usleep(150_000)
        }
        let fast = load.stop()
        recorder.stop()
        #expect(fast > 20, "the load generator's fast requests: \(fast)")

        let trace = DecodedTrace(
            decoding: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), fileName: path)
        #expect(trace.outcome.endedCleanly, "\(trace.outcome.problems)")
        let seen = trace.stalls.map { stall in
            "\(stall.callout.label ?? "-"): \(StallAccounting.duration(stall) / 1_000_000) ms, \(stall.samples.count) samples, "
                + "\(stall.samples.first?.frames.prefix(4).compactMap(\.symbol).joined(separator: " <- ") ?? "")"
        }
        #expect(trace.stalls.count == Self.blocked.count, "\(seen)")
        let classifier = Classifier()
        for request in Self.blocked {
            let stalls = trace.stalls.filter { stall in
                stall.samples.contains { $0.frames.contains { $0.symbol?.contains(request.culprit) == true } }
            }
            #expect(stalls.count == 1, "\(request.path): \(stalls.count) stalls with \(request.culprit); \(seen)")
            guard let stall = stalls.first else { continue }
            let breakdown = classifier.breakdown(of: stall)
            #expect(
                breakdown.dominant == request.category,
                "\(request.path): \(breakdown.dominant?.rawValue ?? "none"), \(breakdown.topReasons)")
            #expect(
                StallAccounting.duration(stall) > 50_000_000, "\(request.path): \(StallAccounting.duration(stall)) ns")
            #expect(stall.callout.label?.hasPrefix("event-loop-") == true)
        }
        // The report names each stall's site after the handler the loop ran (its source line),
        // not the monitor's heartbeat: with the CLI scripts/nio-integration.sh passes.
        if let cli = ProcessInfo.processInfo.environment["STALLWATCH_CLI"] {
            let report = Process()
            report.executableURL = URL(fileURLWithPath: cli)
            report.arguments = ["report", path, "--json"]
            let output = Pipe()
            report.standardOutput = output
            try report.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            report.waitUntilExit()
            let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let signatures = try #require(json["signatures"] as? [[String: Any]])
            #expect(signatures.count == Self.blocked.count, "\(signatures.map { $0["frames"] ?? "?" })")
            for signature in signatures {
                let site = signature["site"] as? String ?? ""
                #expect(
                    site.hasPrefix("StallwatchNIOTests/RealServerTests.swift:"),
                    "\(signature["frames"] ?? "?"): \(site)")
                let frames = signature["frames"] as? [String] ?? []
                #expect(frames.contains { $0.contains("BlockingHandler.channelRead") }, "\(frames)")
            }
        }
    }

    @Test func anIdleServerRecordsNothing() throws {
        let server = try Server()
        defer { server.close() }
        let path = NSTemporaryDirectory() + "nio-idle-\(UUID().uuidString).swtrace"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let monitor = HeartbeatMonitor()
        let executors = monitor.watch(server.group)
        let recorder = try HeartbeatRecorder(path: path, monitor: monitor)
        try recorder.start()
        sleep(1)
        recorder.stop()
        let trace = DecodedTrace(
            decoding: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), fileName: path)
        #expect(trace.stalls.isEmpty, "\(trace.stalls.map(StallAccounting.duration))")
        // An idle loop is woken by the monitor's few checks, not a heartbeat per frame.
        for executor in executors {
            #expect(executor.heartbeatsRun < 30, "\(executor.label): \(executor.heartbeatsRun) heartbeats in 1 s")
        }
    }
}

// MARK: - The server

/// An HTTP/1.1 server on loopback on two event loops; `BlockingHandler` answers.
final class Server: Sendable {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    let channel: any Channel
    let port: Int

    init() throws {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 16)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(BlockingHandler())
                }
            }
        channel = try bootstrap.bind(host: "127.0.0.1", port: 0).wait()
        port = channel.localAddress?.port ?? 0
    }

    func close() {
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }
}

/// Answers `ok PATH`, after blocking the event loop as the path says (`/fast`: not at all).
final class BlockingHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    private var path = "/"

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): path = head.uri
        case .body: break
        case .end:
            Blockers.block(path)
            let body = context.channel.allocator.buffer(string: "ok \(path)")
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "\(body.readableBytes)")
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil
            )
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}

/// What the handler blocks in, one function per category.
enum Blockers {
    static let milliseconds = 90.0

    static func block(_ path: String) {
        switch path {
        case "/compute": _ = checksumOfTheBody()
        case "/pipe": _ = readFromTheSlowPipe()
        case "/lock": readSettingsUnderTheLock()
        case "/sqlite": runTheSlowQuery()
        case "/sleep": sleepBeforeReplying()
        default: break
        }
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Compute: FNV-1a over a buffer until the time is up.
    @inline(never) static func checksumOfTheBody() -> UInt64 {
        let bytes = [UInt8](repeating: 7, count: 4096)
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        let end = now() + milliseconds / 1000
        while now() < end {
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        }
        return hash
    }

    /// I/O: a read from a pipe whose writer answers late.
    @inline(never) static func readFromTheSlowPipe() -> Int {
        var fds: [Int32] = [0, 0]
        pipe(&fds)
        let writer = fds[1]
        Thread.detachNewThread {
            usleep(useconds_t(milliseconds * 1000))
            _ = write(writer, "record", 6)
            close(writer)
        }
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = read(fds[0], &buffer, buffer.count)
        close(fds[0])
        return count
    }

    static let settingsLock = NSLock()

    /// Lock wait: the settings a background save holds locked.
    @inline(never) static func readSettingsUnderTheLock() {
        let held = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            settingsLock.lock()
            held.signal()
            usleep(useconds_t(milliseconds * 1000))
            settingsLock.unlock()
        }
        held.wait()
        settingsLock.lock()
        settingsLock.unlock()
    }

    /// Database: a recursive query long enough to take the time, on an in-memory database.
    @inline(never) static func runTheSlowQuery() {
        var db: OpaquePointer?
        guard sqlite3_open(":memory:", &db) == SQLITE_OK else { return }
        defer { sqlite3_close(db) }
        let end = now() + milliseconds / 1000
        while now() < end {
            sqlite3_exec(
                db,
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) SELECT sum(x) FROM c",
                nil, nil, nil)
        }
    }

    /// Other: a sleep on the event loop.
    @inline(never) static func sleepBeforeReplying() {
        usleep(useconds_t(milliseconds * 1000))
    }
}

// MARK: - Clients

/// A blocking HTTP/1.1 client on one keep-alive loopback connection.
final class HTTPClient {
    private let socket: Int32

    init(port: Int) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else { throw POSIXError(.ECONNREFUSED) }
    }

    deinit { close(socket) }

    /// The body of `GET path`.
    func get(_ path: String) throws -> String {
        let request = Array("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
        guard write(socket, request, request.count) == request.count else { throw POSIXError(.EIO) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let text = String(decoding: received, as: UTF8.self)
            if let split = text.range(of: "\r\n\r\n"),
                let lengthLine = text[..<split.lowerBound].split(separator: "\r\n").first(where: {
                    $0.lowercased().hasPrefix("content-length:")
                }),
                let length = Int(lengthLine.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)),
                text.utf8.count - text.utf8.distance(from: text.startIndex, to: split.upperBound) >= length
            {
                return String(text[split.upperBound...].prefix(length))
            }
            let count = read(socket, &buffer, buffer.count)
            guard count > 0 else { throw POSIXError(.ECONNRESET) }
            received += buffer[..<count]
        }
    }
}

/// Fast requests on a connection of their own, at most one per 2 ms, until `stop()`.
final class LoadGenerator: @unchecked Sendable {  // `done` and `count` are guarded by `lock`
    private let lock = NSLock()
    private var done = false
    private var count = 0
    private let finished = DispatchSemaphore(value: 0)

    init(port: Int) {
        Thread.detachNewThread { [self] in
            defer { finished.signal() }
            guard let client = try? HTTPClient(port: port) else { return }
            while !lock.withLock({ done }) {
                guard (try? client.get("/fast")) == "ok /fast" else { return }
                lock.withLock { count += 1 }
                usleep(2_000)
            }
        }
    }

    /// Stops it; how many requests it made.
    func stop() -> Int {
        lock.withLock { done = true }
        finished.wait()
        return lock.withLock { count }
    }
}
