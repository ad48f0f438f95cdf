// Synthetic traces for the report and CLI tests, written with Core's TraceEncoder: six stalls
// of every kind (`Fixture.standard`), many short hitches.
import StallwatchCore

/// Builds trace bytes record by record.
package struct TraceBuilder {
    package var encoder = TraceEncoder()
    package var bytes = TraceEncoder.preamble

    package init() {}

    package mutating func add(_ record: TraceRecord) {
        encoder.append(record, to: &bytes)
    }

    package mutating func add(_ records: [TraceRecord]) {
        for record in records { add(record) }
    }
}

package enum Fixture {
    package static let second: UInt64 = 1_000_000_000
    package static let millisecond: UInt64 = 1_000_000
    package static let clockBase: UInt64 = 1 * second
    package static let fsync = SyscallTable.number(for: "fsync")!
    package static let futex = SyscallTable.number(for: "futex")!

    package enum Address {
        package static let main: UInt64 = 0x1000
        package static let reload: UInt64 = 0x1100
        package static let checksum: UInt64 = 0x1200
        package static let save: UInt64 = 0x1300
        package static let lookup: UInt64 = 0x1400
        package static let fsync: UInt64 = 0x7000_2000
        package static let mutexLock: UInt64 = 0x7000_2200
        package static let sqliteStep: UInt64 = 0x7100_3000
    }

    /// Six stalls (compute hang, two io hitches, database micro hang, unfinished lock wait,
    /// compute hitch), two frame-clock summaries and a latency histogram, 6 s of run time.
    /// With `appState`, what the app said of four of them (`stallContext`, as `appStates`).
    package static func standard(
        mode: TraceMode = .stalls, withCallouts: Bool = false, appState: Bool = false, extra: [TraceRecord] = []
    ) -> [UInt8] {
        var builder = TraceBuilder()
        builder.add([
            .header(
                .init(
                    processName: "FixtureApp", pid: 4242, wallClockStart: 1_700_000_000 * second, clockBase: clockBase,
                    mode: mode, thresholds: .default, sampleInterval: .milliseconds(5))),
            .module(.init(index: 1, loadAddress: 0x1000, path: "/opt/fixture/FixtureApp")),
            .module(.init(index: 2, loadAddress: 0x7000_0000, path: "/usr/lib/x86_64-linux-gnu/libc.so.6")),
            .module(.init(index: 3, loadAddress: 0x7100_0000, path: "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0")),
            .callSite(.init(id: 1, kind: .post, label: "feed.reload", file: "FixtureApp/Feed.swift", line: 12)),
            .callSite(.init(id: 2, kind: .timer, file: "FixtureApp/Store.swift", line: 30)),
            .callSite(.init(id: 3, kind: .post, file: "FixtureApp/Cache.swift", line: 5)),
            .callSite(.init(id: 4, kind: .source, label: "db", file: "FixtureApp/Database.swift", line: 77)),
            .modeName(.init(id: 0, name: "default")),
        ])
        let app = "FixtureApp/"
        builder.add([
            .symbol(
                .init(address: Address.main, module: 1, name: "FixtureApp.main()", file: app + "main.swift", line: 10)),
            .symbol(
                .init(
                    address: Address.reload, module: 1, name: "FixtureApp.Feed.reload()", file: app + "Feed.swift",
                    line: 42)),
            .symbol(
                .init(
                    address: Address.checksum, module: 1, name: "FixtureApp.checksum(Swift.Int) -> Swift.Int",
                    file: app + "Checksum.swift", line: 7)),
            .symbol(
                .init(
                    address: Address.save, module: 1, name: "FixtureApp.Store.save()", file: app + "Store.swift",
                    line: 88)),
            .symbol(
                .init(
                    address: Address.lookup, module: 1, name: "FixtureApp.Cache.lookup()", file: app + "Cache.swift",
                    line: 19)),
            .symbol(.init(address: Address.fsync, module: 2, name: "fsync")),
            .symbol(.init(address: Address.mutexLock, module: 2, name: "pthread_mutex_lock")),
            .symbol(.init(address: Address.sqliteStep, module: 3, name: "sqlite3_step")),
        ])
        let computeStack = [Address.checksum, Address.reload, Address.main]
        let ioStack = [Address.fsync, Address.save, Address.main]
        let databaseStack = [Address.sqliteStep, Address.lookup, Address.main]
        let lockStack = [Address.mutexLock, Address.lookup, Address.main]
        func stall(
            _ id: UInt64, site: UInt64, at start: UInt64, lasting duration: UInt64?, tier: Tier,
            samples: [(offset: UInt64, state: ThreadState, syscall: Int32?, frames: [UInt64])]
        ) -> [TraceRecord] {
            var records: [TraceRecord] = [
                .stallBegan(.init(id: id, start: start, site: site, mode: 0, phase: .beforeSources, tier: tier))
            ]
            for (index, sample) in samples.enumerated() {
                records.append(
                    .sample(
                        .init(
                            stall: id, index: UInt64(index), time: start + sample.offset, state: sample.state,
                            syscall: sample.syscall,
                            cpuTime: sample.offset, frames: sample.frames)))
            }
            if let duration { records.append(.stallEnded(.init(id: id, end: start + duration))) }
            return records
        }
        let ms = millisecond
        builder.add(
            stall(
                1, site: 1, at: 1_200 * ms, lasting: 300 * ms, tier: .hitch,
                samples: [17, 50, 100, 200].map { ($0 * ms, .running, nil, computeStack) }))
        builder.add(
            stall(
                2, site: 2, at: 2_000 * ms, lasting: 40 * ms, tier: .hitch,
                samples: [17, 30].map { ($0 * ms, .diskSleep, fsync, ioStack) }))
        builder.add(
            stall(
                3, site: 2, at: 3_000 * ms, lasting: 25 * ms, tier: .hitch,
                samples: [(17 * ms, .diskSleep, fsync, ioStack)]))
        builder.add(
            stall(
                4, site: 4, at: 4_000 * ms, lasting: 150 * ms, tier: .hitch,
                samples: [20, 60, 100].map { ($0 * ms, .running, nil, databaseStack) }))
        builder.add(
            stall(
                6, site: 1, at: 6_000 * ms, lasting: 20 * ms, tier: .hitch,
                samples: [(17 * ms, .running, nil, computeStack)]))
        builder.add(
            stall(
                5, site: 3, at: 5_000 * ms, lasting: nil, tier: .hitch,
                samples: [17, 60].map { ($0 * ms, .sleeping, futex, lockStack) }))
        // Its second sample's stack came from the /proc stack scan (the first has no such record).
        builder.add([.sampleProvenance(.init(stall: 5, sample: 1, source: .scan))])
        builder.add([
            .frameClock(
                .init(intervalStart: 1 * second, intervalLength: 3 * second, expected: 180, delivered: 170, dropped: 10)
            ),
            .frameClock(
                .init(intervalStart: 4 * second, intervalLength: 3 * second, expected: 180, delivered: 160, dropped: 20)
            ),
            .latencyHistogram(
                .init(
                    intervalStart: 1 * second, intervalLength: 6 * second,
                    buckets: [
                        .init(index: UInt16(LatencyBuckets.index(forNanoseconds: 50_000)), count: 990),
                        .init(index: UInt16(LatencyBuckets.index(forNanoseconds: 2_000_000)), count: 9),
                        .init(index: UInt16(LatencyBuckets.index(forNanoseconds: 300_000_000)), count: 1),
                    ])),
        ])
        if appState { builder.add(appStates.map { .stallContext($0) }) }
        builder.add(extra)
        if withCallouts {
            for index in 0..<10 {
                builder.add(
                    .callout(.init(site: 1, mode: 0, start: (1_100 + UInt64(index) * 10) * ms, duration: 2 * ms)))
            }
        }
        return builder.bytes
    }

    /// The app's state at stalls 1 and 4 (`screen=Feed`), 2 (`screen=Settings`) and 3 (the
    /// expected-long `export.pdf` under `modal=true`, `screen=Export`); 5 and 6 have none.
    package static let appStates: [TraceRecord.StallContext] = {
        func state(_ pairs: KeyValuePairs<String, String>) -> [TraceRecord.StallContext.KeyValue] {
            pairs.map { .init(key: $0.key, value: $0.value) }
        }
        return [
            .init(id: 1, expected: nil, state: state(["screen": "Feed"])),
            .init(id: 2, expected: nil, state: state(["screen": "Settings"])),
            .init(id: 3, expected: "export.pdf", state: state(["modal": "true", "screen": "Export"])),
            .init(id: 4, expected: nil, state: state(["screen": "Feed"])),
        ]
    }()

    /// A trace with just a header and `count` compute hitches of `duration` at site 1.
    package static func hitches(count: Int, duration: UInt64, runTime: UInt64 = 10 * second) -> [UInt8] {
        var builder = TraceBuilder()
        builder.add(
            .header(.init(processName: "Hitchy", pid: 7, wallClockStart: 0, clockBase: clockBase, mode: .stalls)))
        builder.add(.callSite(.init(id: 1, kind: .post, file: "Hitchy/main.swift", line: 3)))
        builder.add(.modeName(.init(id: 0, name: "default")))
        builder.add(.symbol(.init(address: 0x10, module: 1, name: "Hitchy.work()")))
        builder.add(.module(.init(index: 1, loadAddress: 0, path: "/opt/hitchy/Hitchy")))
        for index in 0..<count {
            let start = clockBase + UInt64(index + 1) * 100 * millisecond
            builder.add(
                .stallBegan(
                    .init(id: UInt64(index + 1), start: start, site: 1, mode: 0, phase: .beforeSources, tier: .hitch)))
            builder.add(
                .sample(
                    .init(
                        stall: UInt64(index + 1), index: 0, time: start + 17 * millisecond, state: .running,
                        frames: [0x10])))
            builder.add(.stallEnded(.init(id: UInt64(index + 1), end: start + duration)))
        }
        builder.add(
            .frameClock(
                .init(intervalStart: clockBase, intervalLength: runTime, expected: 600, delivered: 600, dropped: 0)))
        return builder.bytes
    }
}
