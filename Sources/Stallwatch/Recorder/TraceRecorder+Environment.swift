import Foundation
import StallwatchCore
import Synchronization

extension TraceRecorder {
    /// What the environment asks for: `STALLWATCH_TRACE=path` turns recording on;
    /// `STALLWATCH_BUDGET_MS` (a positive number of milliseconds),
    /// `STALLWATCH_MODE=stalls|full`, `STALLWATCH_FLIGHT_MS` (the flight recorder's window, 0
    /// for none) and, for the preload library, `STALLWATCH_UNSERVICED_MS` tune it. Bad values
    /// are reported on stderr once and the defaults used. Which process of a recorded tree this
    /// one is (`STALLWATCH_ROOT_PID`, `STALLWATCH_RECORD_PID`, `STALLWATCH_CHILDREN`: see
    /// `TraceRecorder+ProcessTree.swift`) decides the file it writes. The one reader of these
    /// variables.
    struct EnvironmentRequest: Equatable {
        /// The recording's trace, `STALLWATCH_TRACE`: the root process's file.
        var path: String
        /// Whether this process is the recording's root (it writes `path`; any other writes a
        /// file of its own under `path + ".d"`).
        var isRoot: Bool
        /// Whether the root has yet to claim the recording (`STALLWATCH_ROOT_PID` is unset).
        var rootUnclaimed: Bool
        var budget: Duration?
        var mode: TraceMode
        var flightWindow: Duration?
        var unservicedWarning: Duration?
        var warnings: [String]

        /// The longest duration a variable may give: a day. Past it a value is a mistake (and
        /// past 9.2e12 ms it would not fit the nanosecond clock at all).
        static let longestMilliseconds = 86_400_000.0

        /// nil when `STALLWATCH_TRACE` is unset or empty, and in a child process of a recording
        /// whose children are not recorded (`STALLWATCH_CHILDREN=0`). `pid` and `parentPID` are
        /// this process's.
        init?(_ environment: [String: String], pid: pid_t = getpid(), parentPID: pid_t = getppid()) {
            guard let path = environment[StallwatchEnvironment.trace], !path.isEmpty else { return nil }
            let root = ProcessTree.role(environment, pid: pid, parentPID: parentPID)
            if !root.isRoot && StallwatchEnvironment.isOff(environment[StallwatchEnvironment.children]) { return nil }
            self.path = path
            isRoot = root.isRoot
            rootUnclaimed = root.unclaimed
            var warnings: [String] = []
            func milliseconds(_ name: String, zeroAllowed: Bool, usual: Duration) -> Duration? {
                guard let text = environment[name] else { return nil }
                if let value = Double(text), value.isFinite, zeroAllowed ? value >= 0 : value > 0,
                    value <= Self.longestMilliseconds
                {
                    return .nanoseconds(Int64((value * 1_000_000).rounded()))
                }
                let what = zeroAllowed ? "a number of milliseconds (0 for none)" : "a positive number of milliseconds"
                let usualText = Double(usual.nanoseconds) / 1e6
                warnings.append(
                    "\(name)=\(text) is not \(what) of at most \(Int(Self.longestMilliseconds)); using \(usualText)")
                return nil
            }
            budget = milliseconds(
                StallwatchEnvironment.budgetMilliseconds, zeroAllowed: false, usual: TierThresholds.default.budget)
            flightWindow = milliseconds(
                StallwatchEnvironment.flightMilliseconds, zeroAllowed: true, usual: TraceRecorder.defaultFlightWindow)
            unservicedWarning = milliseconds(
                StallwatchEnvironment.unservicedMilliseconds, zeroAllowed: false,
                usual: HeartbeatMonitor.Configuration().unservicedWarning)
            mode = .stalls
            if let text = environment[StallwatchEnvironment.mode] {
                switch text {
                case "stalls": mode = .stalls
                case "full": mode = .full
                default:
                    warnings.append("\(StallwatchEnvironment.mode)=\(text) is not 'stalls' or 'full'; using stalls")
                }
            }
            self.warnings = warnings
        }
    }

    /// The recorder `STALLWATCH_TRACE` started for `MainLoop.main`, if any (set when the loop
    /// first runs). It records the app's own `StallMonitor` when the app runs one. Any thread.
    public static var fromEnvironment: TraceRecorder? { environmentRecorder.withLock { $0 } }

    private static let environmentRecorder = Locked<TraceRecorder?>(nil)

    /// The process that started it: a child it forks inherits the atexit handler but none of
    /// the threads `stop()` waits for, nor the right to write the parent's trace.
    private static let environmentProcess = Atomic<pid_t>(0)

    /// An app starts its own `StallMonitor` on `loop` while the environment's recorder watches
    /// it with a monitor of its own: that monitor stops so the app's can start (a second one
    /// would trap), and the recorder, still writing the same trace, is returned to record the
    /// app's monitor once it runs (`adopt`). Called by `StallMonitor.start`.
    static func yieldEnvironmentRecorder(of loop: MainLoop) -> TraceRecorder? {
        guard let recorder = environmentRecorder.withLock({ $0 }), recorder.loop === loop else { return nil }
        Messages.say("\(StallwatchEnvironment.trace)=\(recorder.path) records the app's own StallMonitor from here on")
        recorder.releaseMonitor()
        return recorder
    }

    /// Called once, on the main thread, when `MainLoop.main` first runs: starts recording if
    /// `STALLWATCH_TRACE` is set (into this process's own file of the recording: `ProcessTree`), and stops (flushing the file) at exit. Never fails the app:
    /// problems are reported on stderr and the app runs unrecorded.
    static func startFromEnvironment(loop: MainLoop) {
        guard let request = EnvironmentRequest(ProcessInfo.processInfo.environment) else { return }
        // An app given STALLWATCH_TRACE by hand (no preload library claimed it) claims it here.
        ProcessTree.claim(request)
        // `stallwatch record` also preloaded the heartbeat recorder for programs without
        // MainLoop; this one times callouts exactly, so the preloaded one stops first.
        PreloadYield.yield()
        let own = StallMonitor.watching(loop)
        if own == nil && loop.board.monitorAttached.load(ordering: .acquiring) {
            // A monitor is starting on this loop this very moment: it cannot be recorded yet, and
            // a second one would trap.
            Messages.say("\(StallwatchEnvironment.trace)=\(request.path) ignored: the app's StallMonitor is starting")
            return
        }
        for warning in request.warnings { Messages.say(warning) }
        var configuration = StallMonitor.Configuration()
        if let budget = request.budget { configuration.budget = budget }
        let flightWindow = request.flightWindow ?? defaultFlightWindow
        do {
            let path = try ProcessTree.file(for: request)
            let recorder: TraceRecorder
            if let own {
                // The app runs its own monitor (a second would trap): record that one, with the
                // app's budget.
                Messages.say("\(StallwatchEnvironment.trace)=\(request.path) records the app's own StallMonitor")
                recorder = try TraceRecorder(
                    path: path, mode: request.mode, recording: own, flightWindow: flightWindow)
            } else {
                recorder = try TraceRecorder(
                    path: path, loop: loop, mode: request.mode, configuration: configuration,
                    flightWindow: flightWindow)
            }
            try recorder.start()
            environmentRecorder.withLock { $0 = recorder }
            environmentProcess.store(getpid(), ordering: .relaxed)
            atexit {
                // In the process that started it only; a forked child touches no lock either.
                guard TraceRecorder.environmentProcess.load(ordering: .relaxed) == getpid() else { return }
                TraceRecorder.fromEnvironment?.stop()
            }
        } catch {
            Messages.say("not recording \(request.path): \(error)")
        }
    }
}
