// A swift-nio HTTP server whose `/report` handler sums up a day of orders on its event loop, and
// the fix: `--fixed` runs the same work on a `NIOThreadPool` and answers when it is done. Both
// run for `--seconds S` (default 3) under a loopback load: one client asks for `/status` (a
// fast answer) as often as it can, another for `/report` every 250 ms. A `HeartbeatMonitor`
// watches both loops (with `StallwatchTicks`, so stalls are timed by the loops' own ticks) and
// a `HeartbeatRecorder` writes the trace (to `STALLWATCH_TRACE`, else a temporary file whose
// path it prints). It prints the stalls and the latency `/status` saw: what every other
// client of a blocked loop waits.
//
//     .build/debug/ReportServer            # the blocking handler
//     .build/debug/ReportServer --fixed    # the work on NIOThreadPool
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOTestServer
import Stallwatch
import StallwatchNIO

let arguments = CommandLine.arguments.dropFirst()
let fixed = arguments.contains("--fixed")
let seconds = arguments.firstIndex(of: "--seconds").flatMap { Double(arguments[arguments.index(after: $0)]) } ?? 3

/// A day of orders summed up: 60 ms of arithmetic (bounded by time, so it blocks as long on any
/// machine and build).
@inline(never) func summarizeOrders() -> UInt64 {
    let end = DispatchTime.now().uptimeNanoseconds + 60_000_000
    var total: UInt64 = 0
    var order: UInt64 = 0
    while DispatchTime.now().uptimeNanoseconds < end {
        for _ in 0..<10_000 {
            total &+= (order &* 2_654_435_761) >> 7
            order &+= 1
        }
    }
    return total
}

/// Answers `/report` with the summary, anything else with `ok`.
final class ReportHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    private let pool: NIOThreadPool?
    private var path = "/"

    /// `pool`: where `/report` runs (nil: on the event loop, as the blocking variant does).
    init(pool: NIOThreadPool?) { self.pool = pool }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): path = head.uri
        case .body: break
        case .end where path == "/report":
            guard let pool else {
                reply(context: context, "\(summarizeOrders())")  // blocks the loop
                return
            }
            // The fix: the work on the pool; the answer back on the channel's loop.
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            pool.runIfActive(eventLoop: context.eventLoop) { summarizeOrders() }.whenSuccess { total in
                bound.value.0.reply(context: bound.value.1, "\(total)")
            }
        case .end:
            reply(context: context, "ok")
        }
    }

    private func reply(context: ChannelHandlerContext, _ text: String) {
        let body = context.channel.allocator.buffer(string: text)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

// One loop, so that a blocked loop is the one every connection is on.
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1, metricsDelegate: StallwatchTicks())
let pool: NIOThreadPool? = fixed ? NIOThreadPool(numberOfThreads: 2) : nil
pool?.start()
let monitor = HeartbeatMonitor()
monitor.watch(group)
let tracePath =
    ProcessInfo.processInfo.environment["STALLWATCH_TRACE"]
    ?? NSTemporaryDirectory() + "report-server-\(fixed ? "fixed" : "blocking")-\(getpid()).swtrace"
let recorder = try HeartbeatRecorder(path: tracePath, monitor: monitor)
try recorder.start()
let channel = try ServerBootstrap(group: group)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
            try channel.pipeline.syncOperations.addHandler(ReportHandler(pool: pool))
        }
    }
    .bind(host: "127.0.0.1", port: 0).wait()
let port = channel.localAddress?.port ?? 0
usleep(200_000)  // the loop has run a heartbeat before the load begins

/// Asks for `path` every `pause` µs until `end`; the latency of each answer, in ms.
func client(_ path: String, pause: useconds_t, until end: Date) -> [Double] {
    guard let connection = try? HTTPClient(port: port) else { return [] }
    var latencies: [Double] = []
    while Date() < end {
        let start = Date()
        guard (try? connection.get(path)) != nil else { break }
        latencies.append(Date().timeIntervalSince(start) * 1000)
        if pause > 0 { usleep(pause) }
    }
    return latencies
}

let end = Date().addingTimeInterval(seconds)
let reports = Thread { _ = client("/report", pause: 250_000, until: end) }
reports.start()
let status = client("/status", pause: 1_000, until: end)
usleep(300_000)
recorder.stop()
try? channel.close().wait()
try? pool?.syncShutdownGracefully()
try? group.syncShutdownGracefully()

let stalls = monitor.statistics.stalls
let sorted = status.sorted()
func percentile(_ p: Double) -> Double {
    sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}
print(
    """
    ReportServer (\(fixed ? "fixed: /report on NIOThreadPool" : "blocking: /report on the event loop")), \
    \(String(format: "%.1f", seconds)) s
      stalls: \(stalls)
      /status: \(status.count) answers, p50 \(String(format: "%.2f", percentile(0.5))) ms, \
    p99 \(String(format: "%.2f", percentile(0.99))) ms, max \(String(format: "%.2f", sorted.last ?? 0)) ms
      trace: \(tracePath)
    """)
