// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Stallwatch",
    products: [
        .library(name: "Stallwatch", targets: ["Stallwatch"]),
        .library(name: "StallwatchRemedies", targets: ["StallwatchRemedies"]),
        .library(name: "StallwatchCore", targets: ["StallwatchCore"]),
        .library(name: "StallwatchAnalysis", targets: ["StallwatchAnalysis"]),
        // Preloadable (LD_PRELOAD) by `stallwatch record`: watches DispatchQueue.main of a program
        // that never heard of Stallwatch.
        .library(name: "StallwatchPreload", type: .dynamic, targets: ["StallwatchPreload"]),
        .executable(name: "stallwatch-bench", targets: ["stallwatch-bench"]),
        .executable(name: "stallwatch", targets: ["stallwatch"]),
    ],
    targets: [
        // Async-signal-safe C: the sampling signal handler (libunwind, loaded with dlopen).
        .target(name: "CStallwatchSampler"),
        // Tiny C shims for the loop's platform code (main-thread identity, libdispatch 4CF hooks).
        .target(name: "CStallwatchShims"),
        // The system's SQLite, for tests, samples and the demo's database stalls.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // What the runtime hands out and writes: the data model (stalls, samples, frames,
        // categories), the trace records and their encoder, the environment contract. No
        // platform code.
        .target(name: "StallwatchCore"),
        // What reads traces: the decoder, the classifier and its rules files, stack
        // breakdowns. Tools link it, and apps that classify their own stalls in process.
        .target(name: "StallwatchAnalysis", dependencies: ["StallwatchCore"]),
        // What apps import: MainLoop, StallMonitor, TraceRecorder.
        .target(
            name: "Stallwatch",
            dependencies: ["StallwatchCore", "CStallwatchSampler", "CStallwatchShims"]
        ),
        // The usual fixes for main-thread stalls as tools on the loop: off-loop work, chunking, idle
        // tasks, throttles, transactions, caches, a loader and a prefetcher. Apps that want them
        // import this too.
        .target(name: "StallwatchRemedies", dependencies: ["Stallwatch", "StallwatchCore", "CStallwatchShims"]),
        // The system's zlib, for the gzip'ed pprof export.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // The preload library: a C constructor that starts a heartbeat monitor and recorder, and the
        // interposed wait calls that time the iterations of event loops (sw_loop_slot.h).
        .target(name: "CStallwatchPreload", dependencies: ["CStallwatchShims"]),
        .target(name: "StallwatchPreload", dependencies: ["Stallwatch", "CStallwatchPreload"]),
        // Reading traces: loading, analysis, rendering, exporters, gate. No command line. The HTML
        // page's script and style sheet are files of their own (Render/Page), compiled in by
        // EmbedFiles so the CLI needs no resource bundle beside it.
        .target(
            name: "StallwatchReport", dependencies: ["StallwatchCore", "StallwatchAnalysis", "CZlib"],
            plugins: ["EmbedFiles"]),
        // Writes a target's .js and .css files into a generated Swift source (`EmbeddedFiles`).
        .plugin(name: "EmbedFiles", capability: .buildTool(), dependencies: ["embed-files"]),
        .executableTarget(name: "embed-files", path: "Plugins/EmbedFilesTool"),
        // The `stallwatch` CLI: its argument parser and the commands (types whose properties are
        // their options). It reads traces only: no runtime, no SQLite (the demo is a sample).
        .executableTarget(
            name: "stallwatch", dependencies: ["StallwatchReport", "StallwatchAnalysis", "StallwatchCore"]),
        .executableTarget(
            name: "stallwatch-bench",
            dependencies: [
                "Stallwatch", "StallwatchCore", "StallwatchAnalysis", "StallwatchRemedies", "StallwatchReport",
                "StallwatchTestSupport",
            ],
            path: "Benchmarks/stallwatch-bench"
        ),
        .executableTarget(name: "HelloLoop", dependencies: ["Stallwatch"], path: "Samples/HelloLoop"),
        .executableTarget(
            name: "DetectStalls", dependencies: ["Stallwatch", "StallwatchCore", "StallwatchAnalysis"],
            path: "Samples/DetectStalls"),
        // The samples' one workload target: the run (monitor + frame clock + recorder, the summary
        // they print) and the four classic main-thread blockers that BlockingMain and the demo share.
        .target(
            name: "SampleSupport", dependencies: ["Stallwatch", "StallwatchCore", "StallwatchAnalysis", "CSQLite"],
            path: "Samples/SampleSupport"),
        .executableTarget(
            name: "FeedScreen", dependencies: ["Stallwatch", "StallwatchRemedies", "SampleSupport", "CSQLite"],
            path: "Samples/FeedScreen"),
        .executableTarget(
            name: "BlockingMain", dependencies: ["Stallwatch", "StallwatchRemedies", "SampleSupport", "CSQLite"],
            path: "Samples/BlockingMain"),
        .executableTarget(
            name: "GalleryScroll", dependencies: ["Stallwatch", "StallwatchRemedies", "SampleSupport"],
            path: "Samples/GalleryScroll"),
        // The README's main job (scripts/demo.sh records and reports it).
        .executableTarget(name: "Demo", dependencies: ["Stallwatch", "SampleSupport"], path: "Samples/Demo"),
        .executableTarget(
            name: "AsyncRender", dependencies: ["Stallwatch", "StallwatchCore", "StallwatchRemedies", "SampleSupport"],
            path: "Samples/AsyncRender"),
        // Programs that never heard of Stallwatch (no dependency): `stallwatch record` watches
        // them through the preload library. And a stand-in for swift-nio that adopts the
        // heartbeat monitor in three lines.
        .executableTarget(name: "DispatchMainApp", path: "Samples/DispatchMainApp"),
        .executableTarget(name: "RunLoopApp", path: "Samples/RunLoopApp"),
        .executableTarget(
            name: "EventLoopServer", dependencies: ["Stallwatch", "StallwatchCore", "StallwatchAnalysis"],
            path: "Samples/EventLoopServer"),
        .executableTarget(
            name: "ThumbnailTasks", dependencies: ["Stallwatch", "StallwatchCore"], path: "Samples/ThumbnailTasks"),
        // A helper executable the tests run as a subprocess: it owns the process's real main thread.
        .executableTarget(
            name: "StallwatchTestHost",
            dependencies: ["Stallwatch", "StallwatchCore", "StallwatchRemedies"],
            path: "Tests/StallwatchTestHost"
        ),
        // Test-only C: which sanitizer the tests were built with, and the threads and probes the
        // sampler's own tests drive the C API with.
        .target(
            name: "CStallwatchTestSupport", dependencies: ["CStallwatchSampler"], path: "Tests/CStallwatchTestSupport"),
        // The one Swift test-support library, in no product: child processes (built products, the
        // `stallwatch` binary, exit tests) whose sanitizer reports fail their test, the sanitizer
        // the tests were built with, the timing-sensitive trait, a loop on a thread of its own and
        // a monitored scenario, trace fixtures, and the trace fuzzer the benchmark shares too. No
        // @testable import: the benchmark's release build compiles it.
        .target(
            name: "StallwatchTestSupport",
            dependencies: ["Stallwatch", "StallwatchCore", "StallwatchAnalysis", "CStallwatchTestSupport"],
            path: "Tests/StallwatchTestSupport"),
        // The sampler's own tests: its C API directly, each test in a fresh child process.
        .testTarget(
            name: "CStallwatchSamplerTests",
            dependencies: ["CStallwatchSampler", "CStallwatchTestSupport", "StallwatchTestSupport"]),
        // StallwatchCore: the data model and the trace encoder.
        .testTarget(
            name: "StallwatchCoreTests", dependencies: ["StallwatchCore", "StallwatchTestSupport"]),
        .testTarget(
            name: "StallwatchAnalysisTests",
            dependencies: ["StallwatchAnalysis", "StallwatchCore", "StallwatchTestSupport"],
            // Stored traces the tests read by path.
            exclude: ["Fixtures"]),
        // Running the `stallwatch` command line in-process (`CLIRun`), for the CLI's and the
        // report's tests. Not in StallwatchTestSupport: it calls into the executable's module, which
        // SwiftPM links only into tests, and the benchmark links StallwatchTestSupport.
        .target(
            name: "StallwatchCLITestSupport", dependencies: ["stallwatch"], path: "Tests/StallwatchCLITestSupport"),
        // StallwatchReport: analysis, rendering, exporters and gate, mostly through the commands
        // that show them, run in-process.
        .testTarget(
            name: "StallwatchReportTests",
            dependencies: [
                "StallwatchReport", "StallwatchCore", "StallwatchAnalysis", "stallwatch", "StallwatchTestSupport",
                "StallwatchCLITestSupport",
                // Records real traces for the export tests, as a subprocess.
                "StallwatchTestHost",
                // Recorded by the HTML report's browser test, as a subprocess.
                "Demo",
            ]),
        // The `stallwatch` CLI: its argument parser, command declarations, help and messages,
        // inputs and exit codes, the built binary as a subprocess, and `record`.
        .testTarget(
            name: "StallwatchCLITests",
            dependencies: [
                "stallwatch", "StallwatchReport", "StallwatchCore", "StallwatchTestSupport", "StallwatchCLITestSupport",
                // Recorded as a process tree, as a subprocess.
                "StallwatchTestHost",
            ]),
        // StallwatchRemedies: each remedy on a real loop.
        .testTarget(
            name: "StallwatchRemediesTests",
            dependencies: [
                "StallwatchRemedies", "Stallwatch", "StallwatchCore", "CStallwatchShims", "StallwatchTestSupport",
            ]
        ),
        // Stallwatch, the runtime: loop, monitors, recorder; and the samples, run as subprocesses.
        .testTarget(
            name: "StallwatchTests",
            dependencies: [
                "Stallwatch", "StallwatchCore", "StallwatchAnalysis", "StallwatchTestSupport", "StallwatchTestHost",
                "CSQLite", "CStallwatchTestSupport",
                // Built for the sample tests, which run them as subprocesses.
                "FeedScreen", "BlockingMain", "GalleryScroll", "AsyncRender", "Demo", "DetectStalls",
                // The heartbeat tests: programs without MainLoop, and the CLI that records them.
                "DispatchMainApp", "RunLoopApp", "EventLoopServer", "ThumbnailTasks", "stallwatch",
            ]),
    ]
)
