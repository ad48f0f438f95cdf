import StallwatchCore

/// The summary of one or more traces: what `stallwatch report` prints and `--json` encodes.
/// Build one with `ReportBuilder.report(_:top:)`; render it with `ReportText.render(_:colour:)`
/// or `JSONOutput.encode(_:)`; check it with `Gate.evaluate(_:limits:)`.
///
/// The JSON schema (documented in `docs/cli.md`) is versioned by `schemaVersion`; times are
/// milliseconds unless a name says otherwise, and absent measurements are `null`. Tiers and
/// categories are JSON object keys spelled as their raw values (`microHang`, `lockWait`).
///
/// A plain value; use it on any thread.
package struct StallReport: Sendable, Hashable, Codable {
    /// Where one input trace came from and how much of it could be read.
    package struct TraceInfo: Sendable, Hashable, Codable {
        /// The path the trace was read from, as given.
        package var path: String
        /// The recording process's name from the trace header (`""` without a header).
        package var process: String
        /// The recording process's id (0 without a header).
        package var pid: UInt32
        /// Whether the recorder wrote every callout (`full`) or stalls only; `nil` when the
        /// trace has no header (JSON: `"unknown"`).
        package var mode: TraceMode?
        /// The file's size in bytes.
        package var bytes: Int
        /// From the header's clock base to the trace's last timestamp, in seconds.
        package var runTimeSeconds: Double
        /// How many stalls the trace holds.
        package var stalls: Int
        /// The truncation or damage the reader met, one `TraceError` line each (empty for a
        /// whole trace).
        package var problems: [String]
        /// The trace id (`TraceFacts.traceID`, 32 hex digits).
        package var traceID: String = ""
        /// The recording host, `null` when the trace does not say.
        package var host: String?
        /// The build (`TraceFacts.build`: app version and build id, or `unknown`).
        package var build: String = "unknown"
        /// The app version, `null` when the trace does not say.
        package var appVersion: String?
        /// What the recording watched (label, how, thread), in the order it began to; one entry
        /// `how: "nothing"` when the process ran nothing to watch; empty for traces that do not
        /// say (recorded before the `watched` record).
        package var watched: [Watched] = []

        /// An executor the recording watched.
        package struct Watched: Sendable, Hashable, Codable {
            package var label: String
            package var how: String
            package var tid: UInt32
        }

        private enum CodingKeys: String, CodingKey {
            case path, process, pid, mode, bytes, runTimeSeconds, stalls, problems, traceID, host, build, appVersion
            case watched
        }

        init(
            path: String, process: String, pid: UInt32, mode: TraceMode?, bytes: Int, runTimeSeconds: Double,
            stalls: Int, problems: [String]
        ) {
            self.path = path
            self.process = process
            self.pid = pid
            self.mode = mode
            self.bytes = bytes
            self.runTimeSeconds = runTimeSeconds
            self.stalls = stalls
            self.problems = problems
        }

        /// Decodes the JSON form (`mode` as `"stalls"`, `"full"` or `"unknown"`).
        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            path = try container.decode(String.self, forKey: .path)
            process = try container.decode(String.self, forKey: .process)
            pid = try container.decode(UInt32.self, forKey: .pid)
            mode = TraceMode(name: try container.decode(String.self, forKey: .mode))
            bytes = try container.decode(Int.self, forKey: .bytes)
            runTimeSeconds = try container.decode(Double.self, forKey: .runTimeSeconds)
            stalls = try container.decode(Int.self, forKey: .stalls)
            problems = try container.decode([String].self, forKey: .problems)
            traceID = try container.decodeIfPresent(String.self, forKey: .traceID) ?? ""
            host = try container.decodeIfPresent(String.self, forKey: .host)
            build = try container.decodeIfPresent(String.self, forKey: .build) ?? "unknown"
            appVersion = try container.decodeIfPresent(String.self, forKey: .appVersion)
            watched = try container.decodeIfPresent([Watched].self, forKey: .watched) ?? []
        }

        /// Encodes the JSON form (`mode` as `"stalls"`, `"full"` or `"unknown"`).
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(path, forKey: .path)
            try container.encode(process, forKey: .process)
            try container.encode(pid, forKey: .pid)
            try container.encode(mode?.name ?? "unknown", forKey: .mode)
            try container.encode(bytes, forKey: .bytes)
            try container.encode(runTimeSeconds, forKey: .runTimeSeconds)
            try container.encode(stalls, forKey: .stalls)
            try container.encode(problems, forKey: .problems)
            try container.encode(traceID, forKey: .traceID)
            try container.encode(host, forKey: .host)
            try container.encode(build, forKey: .build)
            try container.encode(appVersion, forKey: .appVersion)
            try container.encode(watched, forKey: .watched)
        }
    }

    /// The frame-clock summaries of every trace, added up.
    package struct FrameStats: Sendable, Hashable, Codable {
        /// Frames the clocks were due to deliver.
        package var expected: UInt64
        /// Frames they delivered.
        package var delivered: UInt64
        /// Frames they dropped because the loop was busy when one was due.
        package var dropped: UInt64
        /// Delivered frames per second of summarized clock time.
        package var fps: Double
    }

    /// How many stalls there were, of which tiers and categories, and how long they took.
    package struct StallStats: Sendable, Hashable, Codable {
        /// Every stall of every trace.
        package var total: Int
        /// Stalls that had not ended when their trace stopped (a kill during a hang).
        package var unfinished: Int
        /// The stalls' durations summed, in milliseconds.
        package var totalMs: Double
        /// Stalls per tier; every tier is present (0 when none).
        package var byTier: [Tier: Int]
        /// Stalls per dominant category; every category is present (0 when none).
        package var byCategory: [StallCategory: Int]
        /// Sample-attributed milliseconds per category (`StallAccounting`: a stall's first
        /// sample also stands for the time before it); every category is present. With
        /// `unsampledMs` they add up to `totalMs`.
        package var categoryMs: [StallCategory: Double]
        /// Milliseconds of stalls that have no sample at all (a stall killed before its first
        /// sample), attributed to no category.
        package var unsampledMs: Double
        /// Stalls of tier `hang` or `severe` (at least 250 ms by default).
        package var hangs: Int
        /// Those stalls' durations summed, in milliseconds: the hang time.
        package var hangMs: Double = 0
    }

    /// Loop-latency percentiles from the traces' latency histograms, in milliseconds; each is
    /// the lower bound of its log-linear histogram bucket (within 6.25 %).
    package struct LatencyStats: Sendable, Hashable, Codable {
        /// How many latencies the histograms hold.
        package var count: UInt64
        /// The median.
        package var p50Ms: Double
        /// The 90th percentile.
        package var p90Ms: Double
        /// The 99th percentile.
        package var p99Ms: Double
        /// The 99.9th percentile.
        package var p999Ms: Double
        /// The lower bound of the highest bucket with a value.
        package var maxMs: Double
    }

    /// One frame of a signature's representative stack, ready to print.
    package struct StackFrame: Sendable, Hashable, Codable {
        /// The short name (`FeedDatabase.loadFeed(rows:)`, `libsqlite3.so.0+0x4f1a3`; see
        /// `FrameNamer`).
        package var name: String
        /// The full demangled symbol, or the short name when unsymbolicated.
        package var symbol: String
        /// The path of the image holding the frame (`null` if unknown).
        @NullWhenAbsent package var module: String?
        /// `file:line` from debug information, relative to the build root when under it
        /// (`null` if unknown or compiler-generated).
        @NullWhenAbsent package var source: String?
        /// Whether the frame is the system's or a toolchain library's, not the app's
        /// (`Frame.isSystem`); renderers dim such frames.
        package var system: Bool
    }

    /// A call site that registered a signature's work, with how many of its stalls it posted.
    package struct SiteCount: Sendable, Hashable, Codable {
        /// The registration's `#fileID:#line` (`Feed/FeedView.swift:88`).
        package var site: String
        /// How many of the signature's stalls came from it.
        package var count: Int
    }

    /// An executor a signature's stalls blocked, and how many of them.
    package struct ExecutorCount: Sendable, Hashable, Codable {
        /// The executor and how it was timed: `NIO-ELT-0-#1 (epoll loop)`, `main-queue
        /// (heartbeat)`, `MainLoop`.
        package var executor: String
        package var count: Int
    }

    /// Names one stall of one trace: what `stallwatch show TRACE --stall ID` takes.
    package struct StallReference: Sendable, Hashable, Codable {
        /// The trace's path, as given.
        package var trace: String
        /// The stall's id within that trace.
        package var stall: UInt64
    }

    /// Stalls that look alike, grouped by dominant category and innermost app frames (see
    /// `SignatureKey`), with what they cost and where they came from.
    package struct Signature: Sendable, Hashable, Codable {
        /// The category that took most of these stalls' time.
        package var category: StallCategory
        /// Up to three app frame names, innermost first; a bracketed reason (`[fsync]`) when
        /// no sample had an app frame.
        package var frames: [String]
        /// How many stalls have this signature.
        package var count: Int
        /// Their durations summed, in milliseconds.
        package var totalMs: Double
        /// The longest one's duration, in milliseconds.
        package var maxMs: Double
        /// Stalls per tier; tiers with none are left out.
        package var tiers: [Tier: Int]
        /// The fraction (0…1) of the sample-attributed time per category; every category is
        /// present.
        package var categoryShares: [StallCategory: Double]
        /// The classifier's most frequent reason within `category` (`sqlite3_step`, `fsync`),
        /// `""` if none.
        package var reason: String
        /// The call site that posted most of them (`#fileID:#line`).
        package var site: String
        /// Every call site, most frequent first.
        package var sites: [SiteCount]
        /// The longest stall's representative stack (`RepresentativeStack`), innermost frame
        /// first.
        package var stack: [StackFrame]
        /// The share (0…1) of the longest stall's time its representative stack stands for;
        /// 0 without a stack.
        package var stackConfidence: Double
        /// The longest stall, to look at with `stallwatch show`.
        package var example: StallReference
        /// How many traces have at least one of these stalls.
        package var traces: Int = 0
        /// `traces` in percent of the traces read.
        package var tracesPercent: Double = 0
        /// The median duration (nearest rank), in milliseconds.
        package var p50Ms: Double = 0
        /// The 95th-percentile duration (nearest rank), in milliseconds.
        package var p95Ms: Double = 0
        /// The earliest stall's wall-clock start, ISO 8601 UTC (`null` without trace headers).
        package var firstSeen: String?
        /// The latest stall's wall-clock start, ISO 8601 UTC (`null` without trace headers).
        package var lastSeen: String?
        /// Stalls and traces per build (`TraceFacts.build`), most stalls first.
        package var builds: [GroupCount] = []
        /// Stalls and traces per host, most stalls first.
        package var hosts: [GroupCount] = []
        /// What the samples waited on (file, socket peer, lock owner, SQL), most frequent first;
        /// nil (and absent from the JSON) when no sample knew.
        package var waits: [WaitCount]? = nil
        /// The executors the stalls blocked (`main-queue (heartbeat)`, `NIO-ELT-0-#1 (epoll
        /// loop)`, `MainLoop`), most stalls first; nil (and absent from the JSON) when every one
        /// was a `MainLoop` callout.
        package var executors: [ExecutorCount]? = nil
        /// The run's figures without these stalls: what fixing them would buy.
        package var ifFixed: IfFixed? = nil

        /// The key the signature was grouped by.
        var key: SignatureKey { SignatureKey(category: category, frames: frames) }
    }

    /// The version of this JSON schema (1); keys may be added within a version, none removed.
    package var schemaVersion = 1
    /// The traces read, in the order given.
    package var traces: [TraceInfo]
    /// What the traces are together: processes, hosts, builds, time span, unreadable inputs.
    package var fleet = FleetSummary(
        traces: 0, processes: 0, hosts: 0, builds: 0, appVersions: 0, bytes: 0, firstStart: nil, lastEnd: nil,
        unreadable: [])
    /// The traces' run times, summed, in seconds.
    package var runTimeSeconds: Double
    /// The fraction (0…1) of run time spent in callouts, over the `full`-mode traces; `nil`
    /// when no trace recorded every callout.
    @NullWhenAbsent package var loopUtilisation: Double?
    /// The frame clocks' totals; `nil` when no frame clock ran.
    @NullWhenAbsent package var frames: FrameStats?
    /// Milliseconds of stall time beyond the frame budget per second of run time (Apple's
    /// hitch-time ratio).
    package var hitchRatioMsPerSecond: Double
    /// `hitchRatioMsPerSecond` graded as Apple does (under 5 good, 5 to 10 warning, over 10 bad).
    package var hitchGrade: HitchGrade = .good
    /// Seconds of hang (stalls of tier `hang` or `severe`, at least 250 ms by default) per hour
    /// of run time.
    package var hangRateSecondsPerHour: Double = 0
    /// Hang rate and hitch ratio per build, highest hang rate first.
    package var rateByBuild: [GroupRate] = []
    /// Hang rate and hitch ratio per host (`unknown` when a trace does not say), highest hang
    /// rate first.
    package var rateByHost: [GroupRate] = []
    /// Stall counts by tier and category.
    package var stalls: StallStats
    /// Loop-latency percentiles; `nil` when the traces hold no latency histograms.
    @NullWhenAbsent package var loopLatency: LatencyStats?
    /// Congested iterations and the sites that took their time; `nil` when there were none.
    @NullWhenAbsent package var congestion: CongestionStats?
    /// How many distinct signatures the stalls fall into.
    package var signatureCount: Int
    /// The largest signatures, by total time (then count): as many as `top` asked for.
    package var signatures: [Signature]
    /// The signatures left out as if fixed (`ReportBuilder.leavingOut`) and how many stalls
    /// each had; not part of the JSON.
    package var leftOut: [String: Int] = [:]
    /// The stalls of work the app expected to be long (`expectLong`), counted apart from
    /// `stalls` and every other figure (unless `--include-expected`, when they are in them and
    /// this is zero).
    package var expected = CountAndTime(stalls: 0, ms: 0)
    /// The stalls by the value of one `AppState` key (`report --by KEY`), most time first;
    /// empty without one.
    package var groups: [Group] = []
    /// The time the processes were stopped (SIGSTOP, a debugger), left out of the run time,
    /// the stalls and the frames, and the stalls left out because only the stop made them long.
    package var stopped = StoppedTime(seconds: 0, stalls: 0)
    /// The recordings of process trees among `traces` (`ProcessTree.trees(of:)`).
    package var processTrees: [ProcessTree] = []

    /// Time the processes were stopped, and the stalls only the stop made long.
    package struct StoppedTime: Sendable, Hashable, Codable {
        package var seconds: Double
        package var stalls: Int
    }

    /// A number of stalls and their time.
    package struct CountAndTime: Sendable, Hashable, Codable {
        package var stalls: Int
        package var ms: Double
    }

    /// The stalls of one value of the grouping key (`(none)`: stalls without the key).
    package struct Group: Sendable, Hashable, Codable {
        package var key: String
        package var value: String
        package var stalls: Int
        package var ms: Double
    }

    /// Every key but `leftOut`; absent measurements are `null` (`NullWhenAbsent`), so the
    /// schema does not move.
    private enum CodingKeys: String, CodingKey {
        case schemaVersion, traces, fleet, runTimeSeconds, loopUtilisation, frames, hitchRatioMsPerSecond, stalls
        case hitchGrade, hangRateSecondsPerHour, rateByBuild, rateByHost
        case loopLatency, congestion, signatureCount, signatures, expected, groups, stopped, processTrees
    }
}
