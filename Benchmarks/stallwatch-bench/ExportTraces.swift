import StallwatchCore

/// The traces `stallwatch-bench export` times the exports on, made with the trace encoder:
/// one of many stalls (stalls mode, a fleet's mix of stacks) and one full-mode trace that is
/// mostly callout records, with a stall every so often. Deterministic.
enum ExportTraces {
    static let millisecond: UInt64 = 1_000_000
    static let second: UInt64 = 1_000_000_000

    /// The app's functions, innermost first per stack, and the system frame under some.
    private static let stacks: [(frames: [String], system: String?, state: ThreadState, syscall: String?)] = [
        (["FeedApp.Parser.parse(_:)", "FeedApp.Feed.reload()"], nil, .running, nil),
        (["FeedApp.Store.save()", "FeedApp.Feed.reload()"], "fsync", .diskSleep, "fsync"),
        (["FeedApp.Database.fetchPosts()", "FeedApp.Feed.reload()"], "sqlite3_step", .running, nil),
        (["FeedApp.Cache.lookup(_:)", "FeedApp.Feed.cell(at:)"], "__lll_lock_wait", .sleeping, "futex"),
        (["FeedApp.Retry.backoff()"], "nanosleep", .sleeping, "nanosleep"),
        (
            [
                "closure #1 in FeedApp.ImageDecoder.decode(_: Foundation.Data) throws -> FeedApp.Image",
                "FeedApp.Feed.cell(at: Swift.Int) -> FeedApp.Cell",
            ], nil, .running, nil
        ),
    ]

    /// A stalls-mode trace of `count` stalls of 17.5–150 ms, sampled every 5 ms.
    static func manyStalls(_ count: Int) -> [UInt8] {
        var writer = Writer(mode: .stalls)
        var random = FleetGenerator.Random(state: 0x57A1_15)
        var time = second
        for id in 1...count {
            let kind = Int(random.below(UInt64(stacks.count)))
            let duration = 17 * millisecond + random.below(133) * millisecond
            time += 20 * millisecond + random.below(200) * millisecond
            writer.stall(id: UInt64(id), site: UInt64(1 + kind % 4), start: time, duration: duration, kind: kind)
            time += duration
        }
        return writer.finish()
    }

    /// A full-mode trace of about `megabytes` MiB: callouts of 0.2–5 µs back to back and, every
    /// 20,000 callouts, one of 25–125 ms with a stall in it.
    static func fullMode(megabytes: Int) -> [UInt8] {
        var writer = Writer(mode: .full)
        writer.bytes.reserveCapacity(megabytes << 20 + 1 << 20)
        var random = FleetGenerator.Random(state: 0xF011)
        var time = second
        var scratch = [UInt8](repeating: 0, count: 64)
        var id: UInt64 = 0
        var callouts = 0
        while writer.bytes.count < megabytes << 20 {
            let site = 1 + random.below(4)
            var duration = 200 + random.below(5_000)
            callouts += 1
            if callouts % 20_000 == 0 {
                id += 1
                duration = 25 * millisecond + random.below(100) * millisecond
                writer.stall(id: id, site: site, start: time, duration: duration, kind: Int(id) % stacks.count)
            }
            let written = scratch.withUnsafeMutableBytes {
                writer.encoder.encodeCallout(site: site, mode: 0, start: time, duration: duration, into: $0)
            }
            writer.bytes.append(contentsOf: scratch[0..<written])
            time += duration + 50
        }
        return writer.finish()
    }

    /// Appends records: a header, modules and call sites first, symbols last.
    private struct Writer {
        var encoder = TraceEncoder()
        var bytes = TraceEncoder.preamble
        var addresses: [String: UInt64] = [:]
        var symbols: [TraceRecord.Symbol] = []
        let appBase: UInt64 = 0x5600_0000_0000
        let libcBase: UInt64 = 0x7f00_0000_0000

        init(mode: TraceMode) {
            add(
                .header(
                    TraceRecord.Header(
                        processName: "FeedApp", pid: 4_242, wallClockStart: 1_796_083_200 * ExportTraces.second,
                        clockBase: ExportTraces.second, mode: mode, thresholds: .default,
                        sampleInterval: .milliseconds(5))))
            add(.module(TraceRecord.Module(index: 1, loadAddress: appBase, path: "/srv/FeedApp")))
            add(.module(TraceRecord.Module(index: 2, loadAddress: libcBase, path: "/usr/lib/libc.so.6")))
            for site in 1...4 {
                add(
                    .callSite(
                        TraceRecord.CallSite(
                            id: UInt64(site), kind: .post, label: nil, file: "FeedApp/Feed.swift",
                            line: UInt32(10 * site))))
            }
            add(.modeName(TraceRecord.ModeName(id: 0, name: "default")))
        }

        mutating func add(_ record: TraceRecord) { encoder.append(record, to: &bytes) }

        mutating func address(_ name: String, system: Bool) -> UInt64 {
            if let known = addresses[name] { return known }
            let value = (system ? libcBase : appBase) + 0x1000 + UInt64(addresses.count) * 0x240
            addresses[name] = value
            symbols.append(
                TraceRecord.Symbol(
                    address: value, module: system ? 2 : 1, name: name, file: system ? nil : "FeedApp/Feed.swift",
                    line: system ? nil : UInt32(20 + addresses.count)))
            return value
        }

        /// A stall of stack `kind` with its samples, every 5 ms from its budget on.
        mutating func stall(id: UInt64, site: UInt64, start: UInt64, duration: UInt64, kind: Int) {
            let stack = ExportTraces.stacks[kind]
            add(
                .stallBegan(
                    TraceRecord.StallBegan(
                        id: id, start: start, site: site, mode: 0, phase: .beforeSources, tier: .hitch)))
            var frames: [UInt64] = []
            if let system = stack.system { frames.append(address(system, system: true)) }
            frames += stack.frames.map { address($0, system: false) }
            frames.append(address("FeedApp.main()", system: false))
            var time = start + 16_666_667
            var cpu: UInt64 = 0
            var index: UInt64 = 0
            while time < start + duration {
                cpu += 5 * ExportTraces.millisecond
                add(
                    .sample(
                        TraceRecord.Sample(
                            stall: id, index: index, time: time, state: stack.state,
                            syscall: stack.syscall.flatMap { SyscallTable.number(for: $0) }, cpuTime: cpu,
                            frames: frames)))
                time += 5 * ExportTraces.millisecond
                index += 1
            }
            add(.stallEnded(TraceRecord.StallEnded(id: id, end: start + duration)))
        }

        mutating func finish() -> [UInt8] {
            for symbol in symbols { add(.symbol(symbol)) }
            return bytes
        }
    }
}
