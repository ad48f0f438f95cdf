// A trace that looks like a real Swift app's: demangled names as the toolchain writes them, an
// app built under `.build/`, a frame without a symbol, compiler-generated glue, stalls whose
// samples move between stacks, and congested iterations with their sites.
import StallwatchCore
import StallwatchTestSupport

extension Fixture {
    enum App {
        static let root = "/work/feedapp/"
        static let executable = root + ".build/debug/FeedApp"
        static let sqlite = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0"
        static let appBase: UInt64 = 0x5555_0000_0000
        static let sqliteBase: UInt64 = 0x7f00_1000_0000

        /// Real demangled names (from a recorded Demo trace) and what the report shows.
        static let names: [(full: String, short: String)] = [
            (
                "SampleSupport.fnv1a(_: Swift.UnsafeRawBufferPointer, seed: Swift.UInt64) -> Swift.UInt64",
                "fnv1a(_:seed:)"
            ),
            (
                "closure #1 (Swift.UnsafeRawBufferPointer) -> Swift.UInt64 in static SampleSupport.PhotoLibrary."
                    + "(hash in _7CEFA7E567FCEEB50EE460ADD21164F8)(_: Swift.Array<Swift.UInt8>, chunk: Swift.Int, "
                    + "seed: Swift.UInt64) -> Swift.UInt64",
                "closure #1 in PhotoLibrary.hash(_:chunk:seed:)"
            ),
            (
                "partial apply forwarder for closure #1 (Swift.UnsafeRawBufferPointer) -> Swift.UInt64 in static "
                    + "SampleSupport.PhotoLibrary.(hash in _7CEFA7E567FCEEB50EE460ADD21164F8)(_: Swift.Array<Swift.UInt8>, "
                    + "chunk: Swift.Int, seed: Swift.UInt64) -> Swift.UInt64",
                "closure #1 in PhotoLibrary.hash(_:chunk:seed:)"
            ),
            (
                "Swift.Array.withUnsafeBytes<A>((Swift.UnsafeRawBufferPointer) throws -> A1) throws -> A1",
                "Array.withUnsafeBytes(_:)"
            ),
            (
                "FoundationEssentials.Data.init(contentsOf: __shared FoundationEssentials.URL, options: "
                    + "FoundationEssentials.Data.ReadingOptions) throws -> FoundationEssentials.Data",
                "Data.init(contentsOf:options:)"
            ),
            (
                "FoundationEssentials.(readBytesFromFileDescriptor in _4EAFA8017F32B80A27F8C495530BA762)(_: Swift.Int32, "
                    + "path: FoundationEssentials.PathOrURL, buffer: Swift.UnsafeMutableRawPointer, length: Swift.Int, "
                    + "readUntilLength: Swift.Bool, reportProgress: Swift.Bool) throws -> Swift.Int",
                "readBytesFromFileDescriptor(_:path:buffer:length:readUntilLength:reportProgress:)"
            ),
            (
                "closure #1 (Stallwatch.MainLoop.Timer) -> () in closure #2 (SampleSupport.SampleRun) -> () in Demo",
                "closure #1 in closure #2 in Demo"
            ),
            (
                "Stallwatch.MainLoop.run(mode: Stallwatch.MainLoop.Mode, until: "
                    + "Swift.Optional<Swift.ContinuousClock.Instant>) -> Stallwatch.MainLoop.RunResult",
                "MainLoop.run(mode:until:)"
            ),
            (
                "SampleSupport.PostsDatabase.search(minimum: Swift.Duration) -> (queries: Swift.Int, matches: Swift.Int)",
                "PostsDatabase.search(minimum:)"
            ),
            (
                "closure #1 () -> () in Stallwatch.MainLoop.fireTimers(_: Stallwatch.ModeState, now: Swift.UInt64) -> "
                    + "Swift.Bool",
                "closure #1 in MainLoop.fireTimers(_:now:)"
            ),
            ("generic specialization <Swift.Int> of Swift.Array.append(__owned A) -> ()", "Array.append(_:)"),
            ("FeedApp.Feed.items.getter : Swift.Array<Swift.Int>", "Feed.items.getter"),
            (
                "protocol witness for Swift.Sequence.makeIterator() -> A.Iterator in conformance "
                    + "Swift.UnsafeRawBufferPointer : Swift.Sequence in Swift",
                "Sequence.makeIterator()"
            ),
            (
                "FeedApp.FeedDatabase.loadFeed(rows: Swift.Int) -> Swift.Array<FeedApp.Row>",
                "FeedDatabase.loadFeed(rows:)"
            ),
            // Not Swift, or not a function: unchanged.
            ("sqlite3_step", "sqlite3_step"),
            ("__libc_start_main@@GLIBC_2.34", "__libc_start_main@@GLIBC_2.34"),
            ("sqlite3VdbeExec.part.0", "sqlite3VdbeExec.part.0"),
            ("std::vector<int>::push_back(int const&)", "std::vector<int>::push_back(int const&)"),
            ("Demo_main", "Demo_main"),
        ]

        enum Address {
            static let main = appBase + 0x1000
            static let loadFeed = appBase + 0x2000
            static let hashClosure = appBase + 0x3000
            static let forwarder = appBase + 0x3100
            static let fnv1a = appBase + 0x4000
            static let withBytes = appBase + 0x5000
            static let step = sqliteBase + 0x2_0000
            static let stripped = sqliteBase + 0x4_f1a3
        }
    }

    /// Two stalls and congestion: a 240 ms compute stall whose samples are in `fnv1a` 3 times
    /// (200 of its 240 ms, 83 %) and once in `withUnsafeBytes`; a 120 ms database stall inside
    /// a stripped sqlite frame; 12 congested iterations, 3 of them described with their sites.
    static func app() -> [UInt8] {
        typealias A = App.Address
        var builder = TraceBuilder()
        let ms = millisecond
        builder.add([
            .header(
                .init(
                    processName: "FeedApp", pid: 4711, wallClockStart: 1_700_000_000 * second, clockBase: clockBase,
                    mode: .full, thresholds: .default, sampleInterval: .milliseconds(5))),
            .module(.init(index: 1, loadAddress: App.appBase, path: App.executable)),
            .module(.init(index: 2, loadAddress: App.sqliteBase, path: App.sqlite)),
            .callSite(.init(id: 1, kind: .timer, label: "hash photos", file: "FeedApp/Photos.swift", line: 40)),
            .callSite(.init(id: 2, kind: .post, label: "load feed", file: "FeedApp/FeedView.swift", line: 88)),
            .callSite(.init(id: 3, kind: .post, label: "thumbnail", file: "FeedApp/Thumbnails.swift", line: 12)),
            .modeName(.init(id: 0, name: "default")),
            .symbol(
                .init(
                    address: A.main, module: 1, name: "FeedApp.main() -> ()",
                    file: App.root + "Sources/FeedApp/main.swift",
                    line: 10)),
            .symbol(
                .init(
                    address: A.loadFeed, module: 1, name: App.names[13].full,
                    file: App.root + "Sources/FeedApp/FeedDatabase.swift", line: 57)),
            .symbol(
                .init(
                    address: A.hashClosure, module: 1, name: App.names[1].full,
                    file: App.root + "Sources/FeedApp/Photos.swift", line: 46)),
            .symbol(
                .init(
                    address: A.forwarder, module: 1, name: App.names[2].full, file: "//<compiler-generated>", line: 0)),
            .symbol(
                .init(
                    address: A.fnv1a, module: 1, name: App.names[0].full, file: App.root + "Sources/FeedApp/Hash.swift",
                    line: 34)),
            .symbol(.init(address: A.withBytes, module: 1, name: App.names[3].full)),
            .symbol(.init(address: A.step, module: 2, name: "sqlite3_step")),
            .symbol(.init(address: A.stripped, module: 2, name: nil)),
        ])
        let hashing = [A.fnv1a, A.hashClosure, A.forwarder, A.main]
        let bytes = [A.withBytes, A.hashClosure, A.forwarder, A.main]
        let query = [A.stripped, A.step, A.loadFeed, A.main]
        let start1 = clockBase + 500 * ms
        builder.add(.stallBegan(.init(id: 1, start: start1, site: 1, mode: 0, phase: .beforeTimers, tier: .hitch)))
        // Weights with the first sample's lead: 17 + 63 = 80, 60, 40 (withUnsafeBytes), 60 ms.
        for (offset, frames) in [(17, hashing), (80, hashing), (140, bytes), (180, hashing)] {
            // Each sample one byte further into the function (another line): addresses
            // differ, names do not.
            let inner = frames[0] + UInt64(offset)
            let fnv1a = frames[0] == A.fnv1a
            builder.add(
                .symbol(
                    .init(
                        address: inner, module: 1, name: fnv1a ? App.names[0].full : App.names[3].full,
                        file: fnv1a ? App.root + "Sources/FeedApp/Hash.swift" : nil, line: fnv1a ? 34 : nil)))
            builder.add(
                .sample(
                    .init(
                        stall: 1, index: UInt64(offset), time: start1 + UInt64(offset) * ms, state: .running,
                        frames: [inner] + frames.dropFirst())))
        }
        builder.add(.stallEnded(.init(id: 1, end: start1 + 240 * ms)))
        let start2 = clockBase + 1_500 * ms
        builder.add(.stallBegan(.init(id: 2, start: start2, site: 2, mode: 0, phase: .beforeSources, tier: .hitch)))
        for offset in [17, 60] {
            builder.add(
                .sample(
                    .init(
                        stall: 2, index: UInt64(offset), time: start2 + UInt64(offset) * ms, state: .running,
                        frames: query)))
        }
        builder.add(.stallEnded(.init(id: 2, end: start2 + 120 * ms)))
        builder.add(.callout(.init(site: 1, mode: 0, start: start1, duration: 240 * ms)))
        builder.add(.callout(.init(site: 2, mode: 0, start: start2, duration: 120 * ms)))
        builder.add(.congestion(.init(intervalStart: clockBase, intervalLength: 2 * second, count: 12)))
        for index in 0..<3 {
            builder.add(
                .congestedIteration(
                    .init(
                        start: clockBase + UInt64(100 + index * 300) * ms, duration: 26 * ms, callouts: 14,
                        sites: [
                            .init(site: 3, count: 12, nanos: 24 * ms), .init(site: 1, count: 2, nanos: 2 * ms),
                        ])))
        }
        builder.add(
            .latencyHistogram(
                .init(
                    intervalStart: clockBase, intervalLength: 2 * second,
                    buckets: [.init(index: UInt16(LatencyBuckets.index(forNanoseconds: 40_000)), count: 500)])))
        return builder.bytes
    }
}
