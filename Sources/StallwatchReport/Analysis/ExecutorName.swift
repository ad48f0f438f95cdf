import StallwatchCore

/// The executor a stall blocked, as reports name it: `main-queue (heartbeat)`,
/// `swift-concurrency-pool (heartbeat)`, `NIO-ELT-0-#1 (epoll loop)`; `MainLoop` for a callout of
/// Stallwatch's own loop. What `show` says as the callout's label and mode, per signature.
enum ExecutorName {
    static let mainLoop = "MainLoop"

    /// nil for a `MainLoop` callout (most stalls of most traces: no name made).
    static func of(_ callout: CalloutIdentity) -> String? {
        guard isExecutor(callout) else { return nil }
        let label = callout.label ?? "?"
        switch callout.mode {
        case StallwatchSymbols.heartbeatMode: return "\(label) (heartbeat)"
        case StallwatchSymbols.queueItemsMode: return "\(label) (one item)"
        case StallwatchSymbols.poolJobsMode: return "\(label) (one long job)"
        default: return "\(label) (\(callout.mode) loop)"
        }
    }

    /// Whether `callout` is an executor's (`HeartbeatMonitor`'s: found by heartbeats or by an
    /// event loop's waits), whose call site is the monitor's, not the app's. The lengths first:
    /// most callouts' files differ from it in length.
    static func isExecutor(_ callout: CalloutIdentity) -> Bool {
        callout.file.utf8.count == StallwatchSymbols.heartbeatFile.utf8.count
            && callout.file == StallwatchSymbols.heartbeatFile
    }
}
