import Foundation
import StallwatchCore

/// `stallwatch-bench generate-fleet DIR N`: N traces as a fleet of installs writes them, for
/// timing `stallwatch report DIR` and the exports. Deterministic (a seeded generator): 50
/// builds released one after another over the fleet's time span, 20 hosts, each trace a minute
/// of one process with 2 to 30 stalls drawn from a realistic mix (compute parses, fsync saves,
/// SQLite reloads, cache lock waits, sleeps) and a regression that only builds 40 and later
/// have (a compute stall in `ImageDecoder.decode`). Each trace's image sits at its own load
/// address, so only function names, not addresses, tie stalls of different traces together.
enum FleetGenerator {
    static let builds = 50
    static let hosts = 20
    static let second: UInt64 = 1_000_000_000
    static let millisecond: UInt64 = 1_000_000
    /// 2026-12-01 00:00 UTC.
    static let fleetStart: UInt64 = 1_796_083_200 * second

    /// Writes `count` traces `DIR/trace-00000.swtrace`…; returns the bytes written.
    static func generate(directory: String, count: Int) throws -> Int {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var total = 0
        for index in 0..<count {
            let bytes = trace(index: index, of: count)
            let name = String(format: "trace-%05d.swtrace", index)
            try Data(bytes).write(to: URL(fileURLWithPath: directory).appendingPathComponent(name))
            total += bytes.count
        }
        return total
    }

    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: UInt64) -> UInt64 { next() % bound }
        mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
    }

    /// A stall kind: the app frames (innermost first) under the system frame, the kernel state.
    struct Scenario {
        var frames: [String]
        var system: String?
        var state: ThreadState
        var syscall: String?
        var site: UInt64
        var weight: Double
        var medianMs: Double
    }

    static let scenarios: [Scenario] = [
        Scenario(
            frames: ["FeedApp.Parser.parse(_:)", "FeedApp.Feed.reload()"], system: nil, state: .running, syscall: nil,
            site: 1, weight: 40, medianMs: 45),
        Scenario(
            frames: ["FeedApp.Store.save()", "FeedApp.Feed.reload()"], system: "fsync", state: .diskSleep,
            syscall: "fsync", site: 2, weight: 20, medianMs: 60),
        Scenario(
            frames: ["FeedApp.Database.fetchPosts()", "FeedApp.Feed.reload()"], system: "sqlite3_step",
            state: .running, syscall: nil, site: 3, weight: 15, medianMs: 80),
        Scenario(
            frames: ["FeedApp.Cache.lookup(_:)", "FeedApp.Feed.cell(at:)"], system: "__lll_lock_wait",
            state: .sleeping, syscall: "futex", site: 4, weight: 15, medianMs: 30),
        Scenario(
            frames: ["FeedApp.Retry.backoff()"], system: "nanosleep", state: .sleeping, syscall: "nanosleep", site: 5,
            weight: 5, medianMs: 120),
    ]

    static let regression = Scenario(
        frames: ["FeedApp.ImageDecoder.decode(_:)", "FeedApp.Feed.cell(at:)"], system: nil, state: .running,
        syscall: nil, site: 4, weight: 25, medianMs: 150)

    static func buildID(_ build: Int) -> [UInt8] {
        var random = Random(state: 0xB011D + UInt64(build))
        return (0..<20).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }

    static func trace(index: Int, of count: Int) -> [UInt8] {
        var random = Random(state: 0x5EED_0000 + UInt64(index))
        let build = index * builds / max(1, count)
        let host = Int(random.below(UInt64(hosts)))
        let span = UInt64(30 * 24 * 3600) * second  // the fleet's month
        let wall = fleetStart + span / UInt64(max(1, count)) * UInt64(index)
        let clockBase = (1_000 + random.below(100_000)) * second
        var encoder = TraceEncoder()
        var bytes = TraceEncoder.preamble
        func add(_ record: TraceRecord) { encoder.append(record, to: &bytes) }
        add(
            .header(
                TraceRecord.Header(
                    processName: "FeedApp", pid: UInt32(1_000 + random.below(60_000)), wallClockStart: wall,
                    clockBase: clockBase, mode: .stalls, thresholds: .default, sampleInterval: .milliseconds(5))))
        add(.platform(TraceRecord.Platform(architecture: "x86_64")))
        let traceID = (0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        add(
            .origin(
                TraceRecord.Origin(
                    traceID: traceID, host: String(format: "host-%02d", host + 1), executable: "/srv/FeedApp",
                    buildID: buildID(build), appVersion: "2.\(build / 10).\(build % 10)")))
        let appBase = 0x5600_0000_0000 + (random.below(1 << 20) << 12)
        let libcBase = 0x7f00_0000_0000 + (random.below(1 << 20) << 12)
        let sqliteBase = libcBase + 0x40_0000
        add(.module(TraceRecord.Module(index: 1, loadAddress: appBase, path: "/srv/FeedApp", buildID: buildID(build))))
        add(.module(TraceRecord.Module(index: 2, loadAddress: libcBase, path: "/usr/lib/x86_64-linux-gnu/libc.so.6")))
        add(
            .module(
                TraceRecord.Module(
                    index: 3, loadAddress: sqliteBase, path: "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0")))
        let files = ["Feed/FeedView.swift", "Feed/Store.swift", "Feed/Database.swift", "Feed/Cells.swift"]
        for site in 1...5 {
            add(
                .callSite(
                    TraceRecord.CallSite(
                        id: UInt64(site), kind: site == 5 ? .timer : .post, label: nil,
                        file: "FeedApp/" + files[(site - 1) % files.count], line: UInt32(10 * site + 2))))
        }
        add(.modeName(TraceRecord.ModeName(id: 0, name: "default")))

        // Addresses: each app function at its own offset in this trace's image.
        var addresses: [String: UInt64] = [:]
        var symbols: [TraceRecord.Symbol] = []
        func address(_ name: String, system: Bool) -> UInt64 {
            if let known = addresses[name] { return known }
            let base = system ? (name == "sqlite3_step" ? sqliteBase : libcBase) : appBase
            let value = base + 0x1000 + UInt64(addresses.count) * 0x240
            addresses[name] = value
            let module: UInt32 = system ? (name == "sqlite3_step" ? 3 : 2) : 1
            symbols.append(
                TraceRecord.Symbol(
                    address: value, module: module, name: name, file: system ? nil : "FeedApp/Sources.swift",
                    line: system ? nil : UInt32(20 + addresses.count)))
            return value
        }
        let mainFrame = address("FeedApp.main()", system: false)

        var time = clockBase + second
        let stallCount = 2 + Int(random.below(29))
        let mix = scenarios + (build >= 40 ? [regression] : [])
        let totalWeight = mix.reduce(0) { $0 + $1.weight }
        for id in 1...stallCount {
            var pick = random.unit() * totalWeight
            var scenario = mix[0]
            for candidate in mix {
                pick -= candidate.weight
                if pick <= 0 {
                    scenario = candidate
                    break
                }
            }
            // Log-normal-ish durations around the scenario's median, at least 17 ms.
            let spread = exp((random.unit() + random.unit() + random.unit() - 1.5) * 1.6)
            let durationMs = max(17.5, scenario.medianMs * spread)
            let duration = UInt64(durationMs * Double(millisecond))
            time += UInt64(1 + random.below(3)) * second / 2
            add(
                .stallBegan(
                    TraceRecord.StallBegan(
                        id: UInt64(id), start: time, site: scenario.site, mode: 0, phase: .beforeSources,
                        tier: .hitch)))
            var frames: [UInt64] = []
            if let system = scenario.system { frames.append(address(system, system: true)) }
            frames += scenario.frames.map { address($0, system: false) }
            frames.append(mainFrame)
            let interval = 5 * millisecond
            var sampleTime = time + 16_666_667
            var cpu: UInt64 = 0
            var index: UInt64 = 0
            while sampleTime < time + duration {
                cpu += scenario.state == .running ? interval : interval / 20
                add(
                    .sample(
                        TraceRecord.Sample(
                            stall: UInt64(id), index: index, time: sampleTime, state: scenario.state,
                            syscall: scenario.syscall.flatMap { SyscallTable.number(for: $0) }, cpuTime: cpu,
                            frames: frames)))
                sampleTime += interval
                index += 1
            }
            add(.stallEnded(TraceRecord.StallEnded(id: UInt64(id), end: time + duration)))
            time += duration
        }
        // Per-10-second summaries: frames and loop latency.
        let end = clockBase + 60 * second
        var interval = clockBase
        while interval < end {
            add(
                .frameClock(
                    TraceRecord.FrameClock(
                        intervalStart: interval, intervalLength: 10 * second, expected: 600, delivered: 590,
                        dropped: 10)))
            add(
                .latencyHistogram(
                    TraceRecord.LatencyHistogram(
                        intervalStart: interval, intervalLength: 10 * second,
                        buckets: [
                            .init(index: 2, count: 9_000), .init(index: 40, count: 900), .init(index: 200, count: 3),
                        ]
                    )))
            interval += 10 * second
        }
        for symbol in symbols { add(.symbol(symbol)) }
        return bytes
    }
}
