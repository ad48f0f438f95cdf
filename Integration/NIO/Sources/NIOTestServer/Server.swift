// The server the integration tests and the bench run: a real swift-nio HTTP/1.1 server
// (NIOPosix's MultiThreadedEventLoopGroup, NIOHTTP1's pipeline) whose handler blocks its event
// loop as the request's path says, and blocking loopback clients.
import CSQLite3
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

// MARK: - The server

/// An HTTP/1.1 server on loopback on two event loops; `BlockingHandler` answers.
public final class Server: Sendable {
    public let group: MultiThreadedEventLoopGroup
    let channel: any Channel
    public let port: Int

    /// A server on `loops` event loops, whose ticks go to `metrics` if given.
    public init(loops: Int = 2, metrics: (any NIOEventLoopMetricsDelegate)? = nil) throws {
        group =
            if let metrics {
                MultiThreadedEventLoopGroup(numberOfThreads: loops, metricsDelegate: metrics)
            } else {
                MultiThreadedEventLoopGroup(numberOfThreads: loops)
            }
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

    public func close() {
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
        case .end where path.hasPrefix("/task"):
            // The same blocking in a task the loop runs in its next tick (as a future's
            // callback would), not in the read event's handling.
            let path = String(path.dropFirst("/task".count))
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.execute {
                let start = DispatchTime.now().uptimeNanoseconds
                Blockers.block(path)
                Blockers.noteBlock(since: start)
                bound.value.0.reply(context: bound.value.1, "/task" + path)
            }
        case .end:
            let start = DispatchTime.now().uptimeNanoseconds
            Blockers.block(path)
            Blockers.noteBlock(since: start)
            reply(context: context, path)
        }
    }

    private func reply(context: ChannelHandlerContext, _ path: String) {
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

/// What the handler blocks in, one function per category.
public enum Blockers {
    static let milliseconds = 90.0

    /// When the last blocking began and ended (CLOCK_MONOTONIC ns), for tests that compare a
    /// stall's times with it.
    public static var lastBlock: (start: UInt64, end: UInt64) { span.withLock { $0 } }
    private static let span = Mutex<(start: UInt64, end: UInt64)>((0, 0))

    /// Notes that a blocking begun at `start` (`DispatchTime.now().uptimeNanoseconds`) ended now.
    static func noteBlock(since start: UInt64) {
        let end = DispatchTime.now().uptimeNanoseconds
        span.withLock { $0 = (start, end) }
    }

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
public final class HTTPClient {
    private let socket: Int32

    public init(port: Int) throws {
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
    public func get(_ path: String) throws -> String {
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

/// Fast requests on a connection of their own, one after another with `pause` between them
/// (at most one per 2 ms by default), until `stop()`.
public final class LoadGenerator: @unchecked Sendable {  // `done` and `count` are guarded by `lock`
    private let lock = NSLock()
    private var done = false
    private var count = 0
    private let finished = DispatchSemaphore(value: 0)

    public init(port: Int, pause: useconds_t = 2_000) {
        Thread.detachNewThread { [self] in
            defer { finished.signal() }
            guard let client = try? HTTPClient(port: port) else { return }
            while !lock.withLock({ done }) {
                guard (try? client.get("/fast")) == "ok /fast" else { return }
                lock.withLock { count += 1 }
                if pause > 0 { usleep(pause) }
            }
        }
    }

    /// Stops it; how many requests it made.
    public func stop() -> Int {
        lock.withLock { done = true }
        finished.wait()
        return lock.withLock { count }
    }
}
