import Foundation

extension TraceRecorder {
    /// What the environment asks for: `STALLWATCH_TRACE=path` turns recording on;
    /// `STALLWATCH_BUDGET_MS` (a positive number of milliseconds) and
    /// `STALLWATCH_MODE=stalls|full` tune it. Bad values are reported on stderr once and the
    /// defaults used.
    struct EnvironmentRequest: Equatable {
        var path: String
        var budgetMilliseconds: Double?
        var mode: TraceMode
        var warnings: [String]

        init?(_ environment: [String: String]) {
            guard let path = environment["STALLWATCH_TRACE"], !path.isEmpty else { return nil }
            self.path = path
            warnings = []
            mode = .stalls
            if let text = environment["STALLWATCH_BUDGET_MS"] {
                if let value = Double(text), value > 0, value.isFinite {
                    budgetMilliseconds = value
                } else {
                    warnings.append("STALLWATCH_BUDGET_MS=\(text) is not a positive number of milliseconds; using 16.7")
                }
            }
            if let text = environment["STALLWATCH_MODE"] {
                switch text {
                case "stalls": mode = .stalls
                case "full": mode = .full
                default: warnings.append("STALLWATCH_MODE=\(text) is not 'stalls' or 'full'; using stalls")
                }
            }
        }
    }

    /// The recorder `STALLWATCH_TRACE` started for `MainLoop.main`, if any (set when the loop
    /// first runs; nil again once an app's own monitor took the loop over). Any thread.
    public static var fromEnvironment: TraceRecorder? { environmentRecorder.withLock { $0 } }

    private static let environmentRecorder = Locked<TraceRecorder?>(nil)

    /// An app starts its own `StallMonitor` on `loop` while the environment's recorder watches
    /// it: the environment steps aside (its trace ends here, complete) so the app's monitor can
    /// start instead of trapping on a second monitor. Called by `StallMonitor.start`.
    static func yieldEnvironmentRecorder(of loop: MainLoop) {
        let recorder = environmentRecorder.withLock { slot -> TraceRecorder? in
            guard let recorder = slot, recorder.loop === loop else { return nil }
            slot = nil
            return recorder
        }
        guard let recorder else { return }
        let message =
            "stallwatch: STALLWATCH_TRACE=\(recorder.path) stopped: the app started its own StallMonitor on the main loop\n"
        FileHandle.standardError.write(Data(message.utf8))
        recorder.stop()
    }

    /// Called once, on the main thread, when `MainLoop.main` first runs: starts recording if
    /// `STALLWATCH_TRACE` is set, and stops (flushing the file) at exit. Never fails the app:
    /// problems are reported on stderr and the app runs unrecorded.
    static func startFromEnvironment(loop: MainLoop) {
        guard let request = EnvironmentRequest(ProcessInfo.processInfo.environment) else { return }
        // `stallwatch record` also preloaded the heartbeat recorder for programs without
        // MainLoop; this one times callouts exactly, so the preloaded one stops first.
        PreloadYield.yield()
        // An app that records itself (its own monitor on this loop) keeps its recorder: a
        // second monitor cannot watch the same loop, and the app must not die for an
        // environment variable.
        if loop.board.monitorAttached.load(ordering: .acquiring) {
            let message =
                "stallwatch: STALLWATCH_TRACE=\(request.path) ignored: the app runs its own StallMonitor on the main loop\n"
            FileHandle.standardError.write(Data(message.utf8))
            return
        }
        for warning in request.warnings { FileHandle.standardError.write(Data("stallwatch: \(warning)\n".utf8)) }
        var configuration = StallMonitor.Configuration()
        if let budget = request.budgetMilliseconds { configuration.budget = .nanoseconds(Int64(budget * 1_000_000)) }
        do {
            let recorder = try TraceRecorder(
                path: request.path, loop: loop, mode: request.mode, configuration: configuration)
            try recorder.start()
            environmentRecorder.withLock { $0 = recorder }
            atexit { TraceRecorder.fromEnvironment?.stop() }
        } catch {
            FileHandle.standardError.write(Data("stallwatch: not recording \(request.path): \(error)\n".utf8))
        }
    }
}
