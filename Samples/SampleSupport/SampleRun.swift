// How every remedy sample runs: on `MainLoop.main` under a stall monitor, with a 60 Hz frame
// clock whose ticks "render" rows, for a fixed time, then a one-screen summary.
import Foundation
import Stallwatch
import StallwatchCore
import Synchronization

/// One run of a sample: the loop, the frame clock, the recorder and what they measured.
///
/// Create it on the main thread, configure `onFrame`, then call `run(_:)`, which starts the
/// workload once the loop runs and returns after the summary is printed. Main actor (the main
/// loop's thread), except `stop()`.
@MainActor public final class SampleRun {
    /// The sample's name, as the summary prints it.
    public nonisolated let name: String
    /// `--fixed` and `--seconds`.
    public nonisolated let options: SampleOptions
    /// The loop the sample runs on: the process's main thread.
    public nonisolated let loop = MainLoop.main
    /// The 60 Hz clock; exists from the moment the workload starts.
    public private(set) var frameClock: FrameClock?
    /// Called on every frame tick; returns the rows it rendered (the summary counts them).
    public var onFrame: (FrameTick) -> Int = { _ in 0 }
    /// Called once the loop has returned and recording has stopped, before the summary (e.g. to
    /// add notes): what it costs is not part of the run.
    public var onFinish: () -> Void = {}
    /// Rows rendered by frame ticks so far.
    public private(set) var rowsRendered = 0
    /// Where the trace is written.
    public private(set) var tracePath = ""

    private var notes: [(label: String, text: String)] = []
    private var recorder: TraceRecorder?
    private var ownsTrace = false
    private let stalls = StallLog()
    private var startNanos: UInt64 = 0
    private var endNanos: UInt64 = 0
    private var cleanups: [() -> Void] = []

    /// A run named `name` with the options of the command line (`--fixed` if the sample has a
    /// fixed variant, `--seconds S`, default `defaultSeconds`); a bad command line prints the
    /// usage and exits 2.
    public convenience init(name: String, defaultSeconds: Double = 2, hasFixedVariant: Bool = true) {
        self.init(
            name: name,
            options: .fromCommandLine(sample: name, defaultSeconds: defaultSeconds, allowsFixed: hasFixedVariant),
            hasFixedVariant: hasFixedVariant)
    }

    /// A run named `name` with `options`.
    public init(name: String, options: SampleOptions, hasFixedVariant: Bool = true) {
        self.name = name
        self.options = options
        self.hasFixedVariant = hasFixedVariant
    }

    /// Whether the sample has a remedy to switch to; without one the summary names no variant.
    public nonisolated let hasFixedVariant: Bool

    /// What the summary and the temporary trace are called: the name and, if any, the variant.
    var title: String { hasFixedVariant ? "\(name)-\(options.variant)" : name }

    /// Adds (or replaces) a line of the summary's results, e.g. a checksum that proves the work
    /// was done. Loop thread.
    public func note(_ label: String, _ text: String) {
        if let index = notes.firstIndex(where: { $0.label == label }) {
            notes[index].text = text
        } else {
            notes.append((label, text))
        }
    }

    /// Runs `body` after the summary, e.g. to remove temporary files. Loop thread.
    public func addCleanup(_ body: @escaping () -> Void) { cleanups.append(body) }

    /// Ends the run early (at the next loop iteration). Any thread.
    public nonisolated func stop() { loop.stop() }

    /// Runs the loop: starts recording, the frame clock and then `workload` inside the loop,
    /// stops after `options.seconds`, prints the summary and returns. Main thread, once.
    public func run(_ workload: @escaping (SampleRun) -> Void) {
        let environmentPath = ProcessInfo.processInfo.environment["STALLWATCH_TRACE"].flatMap { $0.isEmpty ? nil : $0 }
        if environmentPath == nil { startOwnRecorder() }
        // `TraceRecorder.fromEnvironment` is set when the loop first runs, before this post runs.
        loop.mainActor.post(label: "SampleRun.start") {
            self.begin(environmentPath: environmentPath, workload: workload)
        }
        loop.run()
        endNanos = MainLoop.monotonicNanos()
        // The recorder stops first: its last summary still sees the frame clock's counters.
        recorder?.stop()
        frameClock?.stop()
        onFinish()
        print(summary())
        for cleanup in cleanups.reversed() { cleanup() }
    }

    private func begin(environmentPath: String?, workload: @escaping (SampleRun) -> Void) {
        if let environmentPath {
            if let recorder = TraceRecorder.fromEnvironment {
                self.recorder = recorder
                tracePath = recorder.path
                recorder.onStallEnded = { [stalls] stall in stalls.append(stall) }
            } else {
                print("\(name): STALLWATCH_TRACE=\(environmentPath) is not recording; using a temporary trace")
                startOwnRecorder()
            }
        }
        let clock = FrameClock(loop: loop, framesPerSecond: 60) { [unowned self] tick in
            rowsRendered += onFrame(tick)
        }
        frameClock = clock
        startNanos = MainLoop.monotonicNanos()
        clock.start()
        loop.schedule(after: .nanoseconds(Int64(options.seconds * 1e9)), label: "SampleRun.finish") {
            [loop] _ in loop.stop()
        }
        workload(self)
    }

    private func startOwnRecorder() {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(title)-\(getpid()).swtrace").path
        do {
            let recorder = try TraceRecorder(path: path, loop: loop)
            recorder.onStallEnded = { [stalls] stall in stalls.append(stall) }
            try recorder.start()
            self.recorder = recorder
            tracePath = path
            ownsTrace = true
        } catch {
            FileHandle.standardError.write(Data("\(name): cannot record to \(path): \(error)\n".utf8))
        }
    }

    /// What the run measured, in the summary's words.
    public var measurement: SampleMeasurement {
        SampleMeasurement(
            seconds: Double(endNanos &- startNanos) / 1e9, stalls: stalls.all,
            framesDelivered: Int(frameClock?.framesDelivered ?? 0), framesDropped: Int(frameClock?.framesDropped ?? 0),
            rowsRendered: rowsRendered)
    }

    /// The one-screen summary `run` prints.
    public func summary() -> String {
        var trace = [tracePath.isEmpty ? "not recorded" : tracePath]
        if ownsTrace { trace.append("stallwatch report \(tracePath)") }
        return SummaryRenderer(
            title: hasFixedVariant ? "\(name) — \(options.variant)" : name, trace: trace, measurement: measurement,
            notes: notes
        ).render()
    }
}

/// The stalls a recorder reported, appended on the monitor's delivery queue. Any thread.
private final class StallLog: Sendable {
    private let stalls = Mutex<[Stall]>([])
    func append(_ stall: Stall) { stalls.withLock { $0.append(stall) } }
    var all: [Stall] { stalls.withLock { $0 } }
}
