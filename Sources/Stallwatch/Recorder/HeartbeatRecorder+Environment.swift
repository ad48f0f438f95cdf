import CStallwatchSampler
import Foundation
import Glibc
import StallwatchCore

extension HeartbeatRecorder {
    /// The recorder the preload library started for `DispatchQueue.main`, if any.
    private static let preloaded = Locked<HeartbeatRecorder?>(nil)

    /// For the preload library's constructor (`stallwatch record` sets `LD_PRELOAD`): when
    /// `STALLWATCH_TRACE` asks for a trace, watches `DispatchQueue.main` with a heartbeat
    /// monitor and records its stalls there, and stops (flushing the file) at exit.
    /// `STALLWATCH_BUDGET_MS` sets the budget; `STALLWATCH_UNSERVICED_MS` how long the main
    /// queue may go without running its first heartbeat before the one warning. Never fails
    /// the program: problems go to stderr. Any thread, before `main` included.
    package static func startPreloaded(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let request = TraceRecorder.EnvironmentRequest(environment) else { return }
        PreloadYield.isPreloadInstance.store(true, ordering: .relaxed)
        for warning in request.warnings { report(warning) }
        if request.mode == .full {
            report("STALLWATCH_MODE=full needs MainLoop (callouts are its own); recording stalls only")
        }
        var configuration = HeartbeatMonitor.Configuration()
        if let budget = request.budgetMilliseconds { configuration.budget = .nanoseconds(Int64(budget * 1_000_000)) }
        if let text = environment["STALLWATCH_UNSERVICED_MS"] {
            if let value = Double(text), value > 0, value.isFinite {
                configuration.unservicedWarning = .nanoseconds(Int64(value * 1_000_000))
            } else {
                report("STALLWATCH_UNSERVICED_MS=\(text) is not a positive number of milliseconds; using 3000")
            }
        }
        let monitor = HeartbeatMonitor(configuration: configuration)
        monitor.watchMainQueue()
        do {
            let recorder = try HeartbeatRecorder(path: request.path, monitor: monitor)
            try recorder.start()
            preloaded.withLock { $0 = recorder }
            atexit { HeartbeatRecorder.stopPreloaded() }
        } catch {
            report("not recording \(request.path): \(error)")
        }
    }

    /// Stops the preloaded recorder (its trace complete) and frees the sampling signal. At
    /// exit, and when the program turns out to run `MainLoop` (whose own recorder is exact and
    /// takes the trace over: see `TraceRecorder.startFromEnvironment`). Any thread.
    /// Returns whether it stopped one (false when it had stopped already, or never started).
    @discardableResult
    package static func stopPreloaded() -> Bool {
        guard
            let recorder = preloaded.withLock({ slot -> HeartbeatRecorder? in
                defer { slot = nil }
                return slot
            })
        else { return false }
        recorder.stop()
        return true
    }

    /// After `stopPreloaded` stopped the recorder, when the program's own Stallwatch takes
    /// over: puts the sampling signal back to its default, so the program's sampler finds it
    /// free. Only once: later, the handler there is the program's. Any thread.
    package static func releasePreloadedSignal() {
        let signal = sw_sampler_installed_signal()
        guard signal > 0 else { return }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = SIG_DFL
        sigemptyset(&action.sa_mask)
        sigaction(signal, &action, nil)
    }

    private static func report(_ message: String) {
        FileHandle.standardError.write(Data("stallwatch: \(message)\n".utf8))
    }
}
