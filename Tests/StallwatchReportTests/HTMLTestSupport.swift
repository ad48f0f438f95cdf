// What the HTML report tests share: the page's data block decoded, headless Chromium run on a
// page, and the traces they render (hostile names, ten thousand stalls).
import Foundation
import StallwatchCore
import StallwatchReport
import StallwatchTestSupport

/// A rendered page and the parts the tests read.
struct RenderedPage {
    var html: String
    var report: StallReport

    /// Renders `traces` (written to `directory` under `names`) as `report --html` does.
    init(_ traces: [[UInt8]], names: [String]? = nil, in directory: TemporaryDirectory) {
        let paths = traces.enumerated().map {
            directory.write(names?[$0.offset] ?? "t\($0.offset).swtrace", $0.element)
        }
        let loaded = TraceLoader.load(paths: paths, includeCallouts: true).map { try! $0.get() }
        let builder = ReportBuilder()
        let analyzed = builder.analyze(loaded)
        report = builder.report(loaded, analyzed: analyzed, top: .max)
        html = HTMLReport.render(report, traces: loaded, analyzed: analyzed)
    }

    /// The text between the data block's tags.
    var dataText: String {
        let open = "<script type=\"application/json\" id=\"report-data\">"
        let start = html.range(of: open)!.upperBound
        let end = html.range(of: "</script>", range: start..<html.endIndex)!.lowerBound
        return String(html[start..<end])
    }

    /// The data block, decoded.
    var data: [String: Any] {
        try! JSONSerialization.jsonObject(with: Data(dataText.utf8)) as! [String: Any]
    }

    var strings: [String] { data["strings"] as! [String] }

    /// Each lane's stall ids, in the page's order.
    var stallIDs: [[Int]] {
        (data["traces"] as! [[String: Any]]).map { lane in
            (lane["stalls"] as! [[Any]]).map { $0[0] as! Int }
        }
    }
}

/// Headless Chromium (Debian's `chromium`, installed by scripts/install-deps.sh).
enum Chromium {
    /// The browser's path, `nil` when it is not installed.
    static let path: String? = {
        let candidates =
            (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
            .map { "\($0)/chromium" } + ["/usr/bin/chromium"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// What loading a page did.
    struct Load {
        /// The document after the page's script ran (`--dump-dom`).
        var dom: String
        /// Every console message Chromium logged (`INFO:CONSOLE…` lines of its log).
        var console: [String]
        /// How long the browser ran, start to exit, in seconds.
        var seconds: Double
        /// The page's own times (`data-ready-ms`: navigation start to ready; `data-script-ms`).
        var readyMs: Double? { attribute("data-ready-ms").flatMap(Double.init) }
        var scriptMs: Double? { attribute("data-script-ms").flatMap(Double.init) }

        /// An attribute of the `<html>` element.
        func attribute(_ name: String) -> String? {
            guard let tag = dom.range(of: "<html"), let close = dom.range(of: ">", range: tag.upperBound..<dom.endIndex)
            else { return nil }
            let element = dom[tag.upperBound..<close.lowerBound]
            guard let start = element.range(of: " \(name)=\"") else { return nil }
            let rest = element[start.upperBound...]
            return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
        }

        /// How many times `text` occurs in the document.
        func count(_ text: String) -> Int { dom.components(separatedBy: text).count - 1 }
    }

    /// Loads `file` (with `fragment` after `#`) and dumps its DOM.
    static func load(_ file: String, fragment: String = "", width: Int = 1400, height: Int = 1000) throws -> Load {
        let result = try run(["--dump-dom", url(file, fragment)], width: width, height: height)
        return Load(
            dom: result.output,
            console: result.errors.split(separator: "\n").filter { $0.contains(":CONSOLE") }.map(String.init),
            seconds: result.seconds)
    }

    /// Renders `file` into the PNG at `png`.
    static func screenshot(_ file: String, fragment: String = "", to png: String, width: Int = 1400, height: Int = 1600)
        throws
    {
        _ = try run(["--hide-scrollbars", "--screenshot=\(png)", url(file, fragment)], width: width, height: height)
    }

    private static func url(_ file: String, _ fragment: String) -> String {
        URL(fileURLWithPath: file).absoluteString + (fragment.isEmpty ? "" : "#" + fragment)
    }

    private static func run(_ arguments: [String], width: Int, height: Int) throws -> (
        output: String, errors: String, seconds: Double
    ) {
        let profile = TemporaryDirectory()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path!)
        process.arguments =
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(profile.path)",
                "--enable-logging=stderr", "--v=0", "--window-size=\(width),\(height)",
            ] + arguments
        let started = Date()
        // A browser that hangs must not hang the suite.
        DispatchQueue.global().asyncAfter(deadline: .now() + 120) { if process.isRunning { process.terminate() } }
        let streams = try runToEnd(process)
        return (streams.output, streams.error, Date().timeIntervalSince(started))
    }
}

extension Fixture {
    /// A `full`-mode trace whose every name (process, call sites, labels, symbols, modules)
    /// tries to become markup or script: each would set `data-pwned` on the page if it ran.
    static let hostileSymbol = "<script>alert(1)</script>"
    static let hostileSite = "\"><img src=x onerror=\"document.documentElement.setAttribute('data-pwned','1')\">"
    static let hostileLabel = "</script><script>document.documentElement.setAttribute('data-pwned','2')</script>"
    static let hostileFrame = "<img src=x onerror=document.documentElement.setAttribute('data-pwned','3')>&amp;"

    static func hostile() -> [UInt8] {
        var builder = TraceBuilder()
        builder.add([
            .header(
                .init(
                    processName: "<b>Evil</b>", pid: 666, wallClockStart: 0, clockBase: clockBase, mode: .full,
                    thresholds: .default, sampleInterval: .milliseconds(5))),
            .module(.init(index: 1, loadAddress: 0x1000, path: "/opt/<evil>/App&Co")),
            .callSite(.init(id: 1, kind: .post, label: hostileLabel, file: hostileSite, line: 1)),
            .modeName(.init(id: 0, name: "<i>mode</i>")),
            .symbol(.init(address: 0x1100, module: 1, name: hostileSymbol, file: "<x>.swift", line: 2)),
            .symbol(.init(address: 0x1200, module: 1, name: hostileFrame)),
        ])
        for index in 0..<3 {
            let id = UInt64(index + 1)
            let start = clockBase + UInt64(index + 1) * 200 * millisecond
            builder.add([
                .stallBegan(.init(id: id, start: start, site: 1, mode: 0, phase: .beforeSources, tier: .microHang)),
                .sample(
                    .init(
                        stall: id, index: 0, time: start + 20 * millisecond, state: .running, frames: [0x1100, 0x1200])),
                .sample(
                    .init(
                        stall: id, index: 1, time: start + 60 * millisecond, state: .running, frames: [0x1100, 0x1200])),
                .stallEnded(.init(id: id, end: start + 120 * millisecond)),
                .callout(.init(site: 1, mode: 0, start: start, duration: 120 * millisecond)),
            ])
        }
        return builder.bytes
    }

    /// A `full`-mode trace of `count` stalls, 30 ms apart, in four categories and all tiers,
    /// over 40 signatures, each with three samples and a callout, with a frame-clock summary
    /// per second: the size and speed test's input.
    /// `manyStalls(10_000)`, made once for the tests that share it.
    static let tenThousandStalls = manyStalls(10_000)

    static func manyStalls(_ count: Int) -> [UInt8] {
        var builder = BulkTraceBuilder(capacity: count * 400 + 65_536)
        builder.add([
            .header(
                .init(
                    processName: "Busy", pid: 9, wallClockStart: 0, clockBase: clockBase, mode: .full,
                    thresholds: .default, sampleInterval: .milliseconds(5))),
            .module(.init(index: 1, loadAddress: 0x1000, path: "/opt/busy/Busy")),
            .module(.init(index: 2, loadAddress: 0x7000_0000, path: "/usr/lib/x86_64-linux-gnu/libc.so.6")),
            .modeName(.init(id: 0, name: "default")),
            .symbol(.init(address: 0x7000_2000, module: 2, name: "fsync")),
            .symbol(.init(address: 0x7000_2200, module: 2, name: "pthread_mutex_lock")),
            .symbol(.init(address: 0x1000, module: 1, name: "Busy.main()", file: "Busy/main.swift", line: 1)),
        ])
        for site in 0..<40 {
            builder.add([
                .callSite(.init(id: UInt64(site + 1), kind: .post, file: "Busy/Feature\(site).swift", line: 10)),
                .symbol(
                    .init(
                        address: 0x2000 + UInt64(site) * 0x10, module: 1, name: "Busy.Feature\(site).update()",
                        file: "Busy/Feature\(site).swift", line: 20)),
                .symbol(
                    .init(
                        address: 0x3000 + UInt64(site) * 0x10, module: 1, name: "Busy.Feature\(site).work(Swift.Int)",
                        file: "Busy/Feature\(site).swift", line: 30)),
            ])
        }
        let durations: [UInt64] = [20, 35, 120, 300, 1_100]
        var time = clockBase
        for index in 0..<count {
            let id = UInt64(index + 1)
            let site = index % 40
            let start = time
            let duration = durations[(index / 40) % (index % 97 == 0 ? 5 : 3)] * millisecond
            time += duration + 30 * millisecond
            let tier: Tier = duration >= 1_000 * millisecond ? .severe : duration >= 250 * millisecond ? .hang : .hitch
            let app = [0x3000 + UInt64(site) * 0x10, 0x2000 + UInt64(site) * 0x10, 0x1000]
            let (state, syscall, frames): (ThreadState, Int32?, [UInt64]) =
                switch site % 4 {
                case 0: (.running, nil, app)
                case 1: (.diskSleep, fsync, [0x7000_2000] + app)
                case 2: (.sleeping, futex, [0x7000_2200] + app)
                default: (.running, nil, app)
                }
            builder.add(
                .stallBegan(
                    .init(id: id, start: start, site: UInt64(site + 1), mode: 0, phase: .beforeSources, tier: tier)))
            for (index, offset) in [17, duration / millisecond / 2, duration / millisecond - 1].enumerated() {
                builder.add(
                    .sample(
                        .init(
                            stall: id, index: UInt64(index), time: start + UInt64(offset) * millisecond, state: state,
                            syscall: syscall,
                            frames: frames)))
            }
            builder.add([
                .stallEnded(.init(id: id, end: start + duration)),
                .callout(.init(site: UInt64(site + 1), mode: 0, start: start, duration: duration)),
            ])
        }
        let seconds = (time - clockBase) / second + 1
        for second in 0..<seconds {
            builder.add(
                .frameClock(
                    .init(
                        intervalStart: clockBase + second * Self.second, intervalLength: Self.second, expected: 60,
                        delivered: 50, dropped: 10)))
        }
        return builder.bytes
    }
}

/// `TraceBuilder` for big traces: encodes into one preallocated buffer instead of growing an
/// array per record (which takes minutes in a debug build for ten thousand stalls).
struct BulkTraceBuilder {
    private var encoder = TraceEncoder()
    private var buffer: [UInt8]
    private var used: Int

    init(capacity: Int) {
        buffer = TraceEncoder.preamble + [UInt8](repeating: 0, count: capacity)
        used = TraceEncoder.preamble.count
    }

    mutating func add(_ record: TraceRecord) {
        var encoder = self.encoder
        let start = used
        let written = buffer.withUnsafeMutableBytes { bytes in
            encoder.encode(record, into: UnsafeMutableRawBufferPointer(rebasing: bytes[start...]))
        }
        precondition(written > 0, "BulkTraceBuilder: capacity too small")
        self.encoder = encoder
        used += written
    }

    mutating func add(_ records: [TraceRecord]) {
        for record in records { add(record) }
    }

    var bytes: [UInt8] { Array(buffer[..<used]) }
}
