import CStallwatchSampler
import Dispatch
import Foundation
import Glibc
import StallwatchCore
import Synchronization

extension HeartbeatRecorder {
    /// The monitor the preload library started for `DispatchQueue.main`, and its recorder
    /// once the main queue ran a heartbeat.
    private static let preloaded = Locked<(monitor: HeartbeatMonitor?, recorder: HeartbeatRecorder?)>((nil, nil))

    /// The process that started them. A child it forks inherits the atexit handler but none of
    /// the threads that handler waits for, nor the right to write the parent's trace.
    private static let preloadedProcess = Atomic<pid_t>(0)

    /// For the preload library's constructor (`stallwatch record` sets `LD_PRELOAD`): when
    /// `STALLWATCH_TRACE` asks for a trace (this process's own file of the recording:
    /// `ProcessTree`), watches `DispatchQueue.main` and the Swift Concurrency pool
    /// (`STALLWATCH_POOL=0`: not the pool) with a heartbeat monitor, and every event loop found by
    /// its waits (`STALLWATCH_LOOPS=0`: none; `watchEventLoops`), records
    /// their stalls there, and stops (flushing the file) at exit.
    /// `STALLWATCH_BUDGET_MS` sets the budget; `STALLWATCH_UNSERVICED_MS` how long the main
    /// queue may go without running its first heartbeat before the one warning. Never fails
    /// the program: problems go to stderr. Any thread, before `main` included.
    package static func startPreloaded(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let request = TraceRecorder.EnvironmentRequest(environment) else { return }
        // Before `main`: the processes the program starts must know they are not the root.
        ProcessTree.claim(request)
        PreloadYield.isPreloadInstance.store(true, ordering: .relaxed)
        for warning in request.warnings { report(warning) }
        var configuration = HeartbeatMonitor.Configuration()
        if let budget = request.budget { configuration.budget = budget }
        if let unserviced = request.unservicedWarning { configuration.unservicedWarning = unserviced }
        let monitor = HeartbeatMonitor(configuration: configuration)
        var executors = [monitor.watchMainQueue()]
        // The Swift Concurrency pool too, unless STALLWATCH_POOL=0 (off, false, no): it gets its first heartbeat
        // with the program's first task, so a program that never runs one is not touched.
        if !StallwatchEnvironment.isOff(environment[StallwatchEnvironment.pool]) {
            executors.append(monitor.watchConcurrencyPool())
        }
        // The trace is opened once the main queue or the pool has run a heartbeat: a program that
        // does neither (or is not a Swift program at all) gets the warning and leaves no file.
        let open: @Sendable () -> Void = {
            DispatchQueue.global().async {
                // Under the lock: a concurrent stop (the program's own Stallwatch taking
                // over) either comes first, and nothing is opened, or after, and stops it.
                preloaded.withLock { slot in
                    guard slot.monitor === monitor, slot.recorder == nil else { return }
                    do {
                        let recorder = try HeartbeatRecorder(path: ProcessTree.file(for: request), monitor: monitor)
                        try recorder.start()
                        slot.recorder = recorder
                    } catch {
                        report("not recording \(request.path): \(error)")
                    }
                }
            }
        }
        for executor in executors { executor.firstBeat.withLock { $0 = open } }
        // Every event-loop thread found by its waits (the preload library interposes them),
        // unless STALLWATCH_LOOPS=0 (off, false, no); the trace opens with the first loop too.
        if !StallwatchEnvironment.isOff(environment[StallwatchEnvironment.loops]) {
            monitor.firstLoop.withLock { $0 = open }
            monitor.watchEventLoops()
        }
        do {
            preloaded.withLock { $0.monitor = monitor }
            try monitor.start()
            preloadedProcess.store(getpid(), ordering: .relaxed)
            atexit { HeartbeatRecorder.stopPreloadedAtExit() }
        } catch {
            preloaded.withLock { $0 = (nil, nil) }
            report("not recording \(request.path): \(error)")
        }
    }

    /// Stops the preloaded monitor and recorder (its trace complete). At exit, and when the program turns out to run `MainLoop` (whose own recorder is exact and
    /// takes the trace over: see `TraceRecorder.startFromEnvironment`). Any thread.
    /// Returns whether it stopped one (false when it had stopped already, or never started).
    @discardableResult
    package static func stopPreloaded() -> Bool {
        let (monitor, recorder) = preloaded.withLock { slot in
            defer { slot = (nil, nil) }
            return slot
        }
        guard let monitor else { return false }
        if let recorder { recorder.stop() } else { monitor.stop() }
        return true
    }

    /// At exit: `stopPreloaded`, in the process that started them only. A forked child that
    /// leaves with exit() (a shell's command substitution, a Python child) would wait forever for
    /// the monitor's and writer's threads, which it does not have; and it touches no lock, which a
    /// thread of the parent may have held at the fork.
    /// Said then, not at start: a program that runs `MainLoop` takes the trace over (and
    /// records full mode itself) after the preload started, so only a program that never did
    /// is told its full-mode trace holds stalls only.
    private static func stopPreloadedAtExit() {
        guard preloadedProcess.load(ordering: .relaxed) == getpid() else { return }
        // The recorded command itself always leaves a trace: one that says nothing was watched
        // when nothing was (no main queue serviced, no Swift task, no event loop), so that
        // `report` explains the program instead of failing on a missing file. Its children
        // leave none then: a build's compilers and linkers would each leave an empty trace.
        if let request = TraceRecorder.EnvironmentRequest(ProcessInfo.processInfo.environment), request.isRoot {
            preloaded.withLock { slot in
                guard let monitor = slot.monitor, slot.recorder == nil,
                    let recorder = try? HeartbeatRecorder(path: request.path, monitor: monitor)
                else { return }
                if (try? recorder.start()) != nil { slot.recorder = recorder }
            }
        }
        let recorded = preloaded.withLock { $0.recorder != nil }
        if stopPreloaded(), recorded,
            TraceRecorder.EnvironmentRequest(ProcessInfo.processInfo.environment)?.mode == .full
        {
            report(
                "\(StallwatchEnvironment.mode)=full needs MainLoop (callouts are its own); the trace holds stalls only")
        }
    }

    /// On an event-loop thread found by its waits before the preloaded monitor set its thread
    /// hook (the preload shim loads the preload library from that thread's first idle wait):
    /// prepares it for sampling, as the hook would have. The loop's thread only.
    package static func preparePreloadedLoopThread() { HeartbeatMonitor.prepareThreadForItems() }

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

    private static func report(_ message: String) { Messages.say(message) }
}
