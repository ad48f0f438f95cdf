import StallwatchCore

/// What a recording watched, in words: so that "0 stalls" of a program whose loops were all
/// watched reads differently from one where nothing was.
enum WatchedText {
    /// One item per executor (`main-queue (heartbeat)`, `NIO-ELT-0-#1 (epoll loop)`,
    /// `swift-concurrency-pool (pool heartbeat)`, `MainLoop (its callouts)`), joined by ", "; or
    /// the words of the sentence saying that nothing was watched, joined by " ".
    static func items(_ watched: [StallReport.TraceInfo.Watched]) -> (items: [String], separator: String) {
        if watched.contains(where: { $0.how == WatchedExecutor.nothing }) {
            let sentence =
                "nothing: the process ran no MainLoop, never serviced DispatchQueue.main, ran no Swift task "
                + "and no event loop was found, so none of its stalls could be seen"
            return (sentence.split(separator: " ").map(String.init), " ")
        }
        return (watched.map(name), ", ")
    }

    private static func name(_ executor: StallReport.TraceInfo.Watched) -> String {
        switch executor.how {
        case WatchedExecutor.mainLoop: "MainLoop (its callouts)"
        case StallwatchSymbols.heartbeatMode: "\(executor.label) (heartbeat)"
        case WatchedExecutor.pool: "\(executor.label) (pool heartbeat)"
        case StallwatchSymbols.queueItemsMode: "\(executor.label) (each item timed)"
        case StallwatchSymbols.poolJobsMode: "\(executor.label) (each job timed)"
        default: "\(executor.label) (\(executor.how) loop)"
        }
    }
}
