// A small fleet for the fleet tests: traces from several hosts and builds, with origins.
import Foundation
import StallwatchCore
import StallwatchTestSupport

enum FleetFixture {
    static let second: UInt64 = 1_000_000_000
    static let millisecond: UInt64 = 1_000_000
    /// 2026-12-01 10:00:00 UTC.
    static let start: UInt64 = 1_796_119_200 * second

    enum Kind {
        /// `Fleet.Parser.parse()` computing.
        case parse
        /// `Fleet.Store.save()` in fsync.
        case save
    }

    /// One trace of `FleetApp` on `host`, build `version` (build id `buildByte` repeated), started
    /// `offset` seconds after `start`, with a stall per `(kind, milliseconds)`; with `origin`
    /// false, no origin record (as traces recorded before it existed); `frames` are frame-clock
    /// records to add.
    static func trace(
        host: String, version: String, buildByte: UInt8, offset: UInt64, stalls: [(Kind, UInt64)],
        origin: Bool = true, pid: UInt32 = 100, frames: [TraceRecord.FrameClock] = []
    ) -> [UInt8] {
        var builder = TraceBuilder()
        let clockBase = 50 * second
        builder.add(
            .header(
                .init(
                    processName: "FleetApp", pid: pid, wallClockStart: start + offset * second, clockBase: clockBase,
                    mode: .stalls, thresholds: .default, sampleInterval: .milliseconds(5))))
        if origin {
            builder.add(
                .origin(
                    .init(
                        traceID: (0..<16).map { UInt8(truncatingIfNeeded: Int(offset) &* 31 &+ $0 &+ 1) }, host: host,
                        executable: "/srv/FleetApp", buildID: [UInt8](repeating: buildByte, count: 20),
                        appVersion: version)))
        }
        builder.add([
            .module(.init(index: 1, loadAddress: 0x1000, path: "/srv/FleetApp", buildID: [buildByte, buildByte])),
            .module(.init(index: 2, loadAddress: 0x7000_0000, path: "/usr/lib/x86_64-linux-gnu/libc.so.6")),
            .callSite(.init(id: 1, kind: .post, file: "FleetApp/Feed.swift", line: 12)),
            .callSite(.init(id: 2, kind: .timer, file: "FleetApp/Store.swift", line: 30)),
            .modeName(.init(id: 0, name: "default")),
        ])
        var time = clockBase + second
        for (index, (kind, milliseconds)) in stalls.enumerated() {
            let id = UInt64(index + 1)
            let duration = milliseconds * millisecond
            builder.add(
                .stallBegan(
                    .init(
                        id: id, start: time, site: kind == .parse ? 1 : 2, mode: 0, phase: .beforeSources, tier: .hitch)
                ))
            var sample = time + 17 * millisecond
            var index: UInt64 = 0
            while sample < time + duration {
                switch kind {
                case .parse:
                    builder.add(
                        .sample(
                            .init(stall: id, index: index, time: sample, state: .running, frames: [0x1100, 0x1000])))
                case .save:
                    builder.add(
                        .sample(
                            .init(
                                stall: id, index: index, time: sample, state: .diskSleep, syscall: Fixture.fsync,
                                frames: [0x7000_2000, 0x1300, 0x1000])))
                    builder.add(
                        .sampleWait(
                            .init(
                                stall: id, sample: index, kind: .file, operation: "fsync", fd: 7,
                                target: "/data/feed.db"
                            )))
                }
                sample += 5 * millisecond
                index += 1
            }
            builder.add(.stallEnded(.init(id: id, end: time + duration)))
            time += duration + second
        }
        builder.add([
            .symbol(.init(address: 0x1000, module: 1, name: "FleetApp.main()", file: "FleetApp/main.swift", line: 3)),
            .symbol(
                .init(
                    address: 0x1100, module: 1, name: "FleetApp.Parser.parse()", file: "FleetApp/Parser.swift", line: 9)
            ),
            .symbol(
                .init(address: 0x1300, module: 1, name: "FleetApp.Store.save()", file: "FleetApp/Store.swift", line: 40)
            ),
            .symbol(.init(address: 0x7000_2000, module: 2, name: "fsync")),
        ])
        builder.add(frames.map { .frameClock($0) })
        return builder.bytes
    }

    /// Six traces: builds 1.0 (ids `aa…`) on h1–h3 with parse stalls only, then builds 1.1
    /// (`bb…`) on h1–h3 that also have save stalls (the regression).
    static func write(into directory: TemporaryDirectory, subdirectory: String = "fleet") -> String {
        let root = directory.path + "/" + subdirectory
        try! FileManager.default.createDirectory(atPath: root + "/old", withIntermediateDirectories: true)
        try! FileManager.default.createDirectory(atPath: root + "/new", withIntermediateDirectories: true)
        for index in 0..<3 {
            _ = directory.write(
                "\(subdirectory)/old/t\(index).swtrace",
                trace(
                    host: "h\(index + 1)", version: "1.0", buildByte: 0xaa, offset: UInt64(index) * 60,
                    stalls: [(.parse, 40), (.parse, 60 + UInt64(index) * 10)]))
            _ = directory.write(
                "\(subdirectory)/new/t\(index).swtrace",
                trace(
                    host: "h\(index + 1)", version: "1.1", buildByte: 0xbb, offset: 600 + UInt64(index) * 60,
                    stalls: [(.parse, 50), (.save, 100 + UInt64(index) * 50)]))
        }
        return root
    }
}
