/// One decoded record of a trace file. Times are `CLOCK_MONOTONIC` nanoseconds unless a field
/// says otherwise; ids refer to definition records (`callSite`, `modeName`, `annotation`)
/// written earlier in the same trace.
///
/// A plain value; use it on any thread.
public enum TraceRecord: Sendable, Hashable {
    /// The process and configuration (kind 1).
    indirect case header(Header)
    /// A sync marker (kind 2).
    case sync(Sync)
    /// A loaded image (kind 3).
    indirect case module(Module)
    /// A call-site definition (kind 4).
    indirect case callSite(CallSite)
    /// A run-loop mode name (kind 5).
    case modeName(ModeName)
    /// An annotation definition (kind 6).
    case annotation(AnnotationDefinition)
    /// A symbolicated address (kind 7).
    indirect case symbol(Symbol)
    /// A stall was detected (kind 8).
    case stallBegan(StallBegan)
    /// A sample during a stall (kind 9).
    indirect case sample(Sample)
    /// A stall ended (kind 10).
    case stallEnded(StallEnded)
    /// One callout, `full` mode (kind 11).
    case callout(Callout)
    /// Congested iterations over an interval (kind 12).
    case congestion(Congestion)
    /// A frame-clock summary (kind 13).
    case frameClock(FrameClock)
    /// A loop-latency histogram (kind 14).
    indirect case latencyHistogram(LatencyHistogram)
    /// Records the recorder dropped (kind 15).
    case lostRecords(LostRecords)
    /// The machine the trace was recorded on (kind 16).
    case platform(Platform)
    /// Where the trace comes from: host, executable, build, app version (kind 20).
    indirect case origin(Origin)
    /// Where a sample's stack came from (kind 17).
    case sampleProvenance(SampleProvenance)
    /// A congested iteration and who took its time.
    indirect case congestedIteration(CongestedIteration)
    /// A sample's kernel counters (kind 18).
    case sampleCounters(SampleCounters)
    /// What a sample's thread waited on (kind 19).
    indirect case sampleWait(SampleWait)
    /// A stall timed by its executor's own clock (kind 22).
    case stallRetimed(StallRetimed)
    /// What the app said of a stall (kind 23).
    indirect case stallContext(StallContext)
    /// The recording was still running at `time` (kind 24).
    case recordedUntil(time: UInt64)
    /// What the loop ran in the seconds before a stall (kind 25).
    indirect case stallLeadUp(StallLeadUp)
    /// The process was stopped from `from` for `length` nanoseconds (kind 26).
    case stopped(from: UInt64, length: UInt64)
    /// Which of a sample's frames are awaiting callers from its async context chain (kind 27).
    case sampleAsyncChain(SampleAsyncChain)
    /// An executor the recording watched from `since` on, or that nothing was (kind 28).
    indirect case watched(WatchedExecutor)

    /// The record's kind id.
    public var kind: TraceRecordKind {
        switch self {
        case .header: .header
        case .sync: .sync
        case .module: .module
        case .callSite: .callSite
        case .modeName: .modeName
        case .annotation: .annotation
        case .symbol: .symbol
        case .stallBegan: .stallBegan
        case .sample: .sample
        case .stallEnded: .stallEnded
        case .callout: .callout
        case .congestion: .congestion
        case .frameClock: .frameClock
        case .latencyHistogram: .latencyHistogram
        case .lostRecords: .lostRecords
        case .platform: .platform
        case .origin: .origin
        case .sampleProvenance: .sampleProvenance
        case .congestedIteration: .congestedIteration
        case .sampleCounters: .sampleCounters
        case .sampleWait: .sampleWait
        case .stallRetimed: .stallRetimed
        case .stallContext: .stallContext
        case .recordedUntil: .recordedUntil
        case .stallLeadUp: .stallLeadUp
        case .stopped: .stopped
        case .sampleAsyncChain: .sampleAsyncChain
        case .watched: .watched
        }
    }
}

extension TraceRecord {
    /// The process and the recorder's configuration.
    public struct Header: Sendable, Hashable {
        /// The process name (`/proc/self/comm` or `argv[0]`'s last component).
        public var processName: String
        /// The process id.
        public var pid: UInt32
        /// Wall-clock time at the start, in nanoseconds since 1970-01-01 00:00 UTC.
        public var wallClockStart: UInt64
        /// `CLOCK_MONOTONIC` nanoseconds at the same instant as `wallClockStart`.
        public var clockBase: UInt64
        /// What the trace records.
        public var mode: TraceMode
        /// The budget and tier thresholds in force.
        public var thresholds: TierThresholds
        /// The interval between samples during a stall.
        public var sampleInterval: Duration

        /// Creates a header.
        public init(
            processName: String, pid: UInt32, wallClockStart: UInt64, clockBase: UInt64,
            mode: TraceMode, thresholds: TierThresholds = .default,
            sampleInterval: Duration = .milliseconds(10)
        ) {
            self.processName = processName
            self.pid = pid
            self.wallClockStart = wallClockStart
            self.clockBase = clockBase
            self.mode = mode
            self.thresholds = thresholds
            self.sampleInterval = sampleInterval
        }
    }

    /// The machine the trace was recorded on: what a reader needs to interpret
    /// machine-specific values (syscall numbers, addresses). Once, right after the header.
    public struct Platform: Sendable, Hashable {
        /// The CPU architecture, in `uname -m` spelling (`"x86_64"`).
        public var architecture: String

        /// Creates a platform record.
        public init(architecture: String) {
            self.architecture = architecture
        }
    }

    /// Where a trace comes from, so that traces from many machines and builds can be told
    /// apart and added up: written once, after the platform record. Traces from before it
    /// existed have none (`DecodedTrace.origin` is nil).
    public struct Origin: Sendable, Hashable {
        /// 16 random bytes naming this trace (an OpenTelemetry trace id when exported).
        public var traceID: [UInt8]
        /// The recording machine's host name (`gethostname`).
        public var host: String
        /// The main executable's path (`/proc/self/exe`).
        public var executable: String
        /// The main executable's GNU build id (`NT_GNU_BUILD_ID`), empty if it has none.
        public var buildID: [UInt8]
        /// The app's version (`STALLWATCH_APP_VERSION` or what the app told the recorder), if known.
        public var appVersion: String?

        /// Creates an origin record.
        public init(
            traceID: [UInt8], host: String, executable: String, buildID: [UInt8] = [], appVersion: String? = nil
        ) {
            self.traceID = traceID
            self.host = host
            self.executable = executable
            self.buildID = buildID
            self.appVersion = appVersion
        }
    }

    /// A sync marker. Readers get it like any record; `TraceEncoder` writes it by itself.
    public struct Sync: Sendable, Hashable {
        /// Counts the sync records one encoder wrote, from 0.
        public var sequence: UInt64
        /// The time the next `callout` record's start is a delta from.
        public var calloutBase: UInt64

        /// Creates a sync marker.
        public init(sequence: UInt64, calloutBase: UInt64) {
            self.sequence = sequence
            self.calloutBase = calloutBase
        }
    }

    /// One image mapped into the process.
    public struct Module: Sendable, Hashable {
        /// The index `Symbol.module` refers to; 1 or more (0 means "unknown module").
        public var index: UInt32
        /// The address the image is loaded at.
        public var loadAddress: UInt64
        /// The image's path.
        public var path: String
        /// The GNU build id (`NT_GNU_BUILD_ID`), empty if the image has none.
        public var buildID: [UInt8]

        /// Creates a module entry.
        public init(index: UInt32, loadAddress: UInt64, path: String, buildID: [UInt8] = []) {
            self.index = index
            self.loadAddress = loadAddress
            self.path = path
            self.buildID = buildID
        }
    }

    /// Where a callout's work was registered; `StallBegan.site` and `Callout.site` refer to it.
    public struct CallSite: Sendable, Hashable {
        /// The id records use for this site.
        public var id: UInt64
        /// The kind of callout.
        public var kind: CalloutKind
        /// The label given at registration, if any.
        public var label: String?
        /// The `#fileID` of the registering code.
        public var file: String
        /// The `#line` of the registering code.
        public var line: UInt32

        /// Creates a call-site definition.
        public init(id: UInt64, kind: CalloutKind, label: String? = nil, file: String, line: UInt32) {
            self.id = id
            self.kind = kind
            self.label = label
            self.file = file
            self.line = line
        }
    }

    /// A run-loop mode's name; stalls and callouts refer to modes by id.
    public struct ModeName: Sendable, Hashable {
        /// The loop's id for the mode.
        public var id: UInt16
        /// The mode's name (`"default"`, `"tracking"`…).
        public var name: String

        /// Creates a mode name definition.
        public init(id: UInt16, name: String) {
            self.id = id
            self.name = name
        }
    }

    /// An annotation the app put around work; samples refer to it by id.
    public struct AnnotationDefinition: Sendable, Hashable {
        /// The id samples use; 1 or more (0 in a sample means "no annotation").
        public var id: UInt64
        /// The label and optional category.
        public var annotation: Annotation

        /// Creates an annotation definition.
        public init(id: UInt64, annotation: Annotation) {
            self.id = id
            self.annotation = annotation
        }
    }

    /// What is known about one code address seen in samples.
    public struct Symbol: Sendable, Hashable {
        /// The address, as samples store it.
        public var address: UInt64
        /// The `Module.index` of the image holding it; 0 if unknown.
        public var module: UInt32
        /// The demangled function name, if known (stripped images have none).
        public var name: String?
        /// The source file, if debug information named it.
        public var file: String?
        /// The source line, if debug information named it (lines start at 1).
        public var line: UInt32?

        /// Creates a symbol record.
        public init(
            address: UInt64, module: UInt32 = 0, name: String?, file: String? = nil,
            line: UInt32? = nil
        ) {
            self.address = address
            self.module = module
            self.name = name
            self.file = file
            self.line = line
        }
    }

    /// A callout overran the budget and became a stall.
    public struct StallBegan: Sendable, Hashable {
        /// The stall's id, unique within the trace.
        public var id: UInt64
        /// When the callout started.
        public var start: UInt64
        /// The `CallSite.id` of the callout.
        public var site: UInt64
        /// The `ModeName.id` the loop ran in.
        public var mode: UInt16
        /// The loop phase the callout ran in.
        public var phase: LoopActivity
        /// The tier when the stall was detected.
        public var tier: Tier

        /// Creates a stall-began record.
        public init(
            id: UInt64, start: UInt64, site: UInt64, mode: UInt16, phase: LoopActivity, tier: Tier
        ) {
            self.id = id
            self.start = start
            self.site = site
            self.mode = mode
            self.phase = phase
            self.tier = tier
        }
    }

    /// One sample of the main thread, with raw frame addresses (see `Symbol`).
    public struct Sample: Sendable, Hashable {
        /// The `StallBegan.id` of the stall it belongs to.
        public var stall: UInt64
        /// Its place among its stall's samples, from 0 in the order the recorder took them: what
        /// the records about it (`sampleProvenance`, `sampleCounters`, `sampleWait`,
        /// `sampleAsyncChain`) name it by.
        public var index: UInt64
        /// The thread sampled, 0 when not known; see `StallwatchCore.Sample`.
        public var tid: Int32
        /// The look it was taken at, shared with the stall's other samples of that look; `nil`
        /// for a look of its own. See `StallwatchCore.Sample`.
        public var look: UInt32?
        /// When it was taken.
        public var time: UInt64
        /// The scheduler state.
        public var state: ThreadState
        /// The syscall number, `nil` if `/proc` said `running`; see `StallwatchCore.Sample`.
        public var syscall: Int32?
        /// The kernel wait channel, if any.
        public var wchan: String?
        /// The thread's CPU time, in nanoseconds.
        public var cpuTime: UInt64
        /// The `AnnotationDefinition.id` active, 0 for none.
        public var annotation: UInt64
        /// Whether the backtrace capture timed out.
        public var captureTimedOut: Bool
        /// Return addresses, innermost first.
        public var frames: [UInt64]

        /// Creates a sample record.
        public init(
            stall: UInt64, index: UInt64, tid: Int32 = 0, look: UInt32? = nil, time: UInt64, state: ThreadState,
            syscall: Int32? = nil, wchan: String? = nil, cpuTime: UInt64 = 0, annotation: UInt64 = 0,
            captureTimedOut: Bool = false, frames: [UInt64] = []
        ) {
            self.stall = stall
            self.index = index
            self.tid = tid
            self.look = look
            self.time = time
            self.state = state
            self.syscall = syscall
            self.wchan = wchan
            self.cpuTime = cpuTime
            self.annotation = annotation
            self.captureTimedOut = captureTimedOut
            self.frames = frames
        }
    }

    /// Where the stack of sample `sample` of stall `stall` came from. A separate kind (not a
    /// `Sample` field) so readers that predate it skip it; a sample without one has the source
    /// `SampleSource.assumed(hasFrames:)` gives.
    public struct SampleProvenance: Sendable, Hashable {
        /// The `StallBegan.id` of the sample's stall.
        public var stall: UInt64
        /// The sample's `Sample.index`.
        public var sample: UInt64
        /// Where its stack came from.
        public var source: SampleSource

        /// Creates a provenance record.
        public init(stall: UInt64, sample: UInt64, source: SampleSource) {
            self.stall = stall
            self.sample = sample
            self.source = source
        }
    }

    /// The frames of sample `sample` of stall `stall` from `firstAsync` on are the
    /// awaiting callers of its innermost async frame, read from the async context chain
    /// (`Frame.isAsync`), and how that chain ended. A separate kind so readers that predate it
    /// skip it (they show the same frames, unmarked).
    public struct SampleAsyncChain: Sendable, Hashable {
        /// The `StallBegan.id` of the sample's stall.
        public var stall: UInt64
        /// The sample's `Sample.index`.
        public var sample: UInt64
        /// The index of the sample's first async frame (its frame count when the chain has none).
        public var firstAsync: UInt64
        /// How the chain ended.
        public var end: AsyncChainEnd

        /// Creates an async chain record.
        public init(stall: UInt64, sample: UInt64, firstAsync: UInt64, end: AsyncChainEnd) {
            self.stall = stall
            self.sample = sample
            self.firstAsync = firstAsync
            self.end = end
        }
    }

    /// A stall's callout returned.
    public struct StallEnded: Sendable, Hashable {
        /// The `StallBegan.id`.
        public var id: UInt64
        /// When the callout returned.
        public var end: UInt64
        /// Facts about the stall.
        public var flags: StallFlags

        /// Creates a stall-ended record.
        public init(id: UInt64, end: UInt64, flags: StallFlags = []) {
            self.id = id
            self.end = end
            self.flags = flags
        }
    }

    /// A stall's start and end as its executor timed them (a swift-nio event loop's tick), which
    /// replace the monitor's own once the stall ended.
    public struct StallRetimed: Sendable, Hashable {
        /// The `StallBegan.id`.
        public var id: UInt64
        /// When the stall began and ended, by the executor's clock (CLOCK_MONOTONIC ns).
        public var start: UInt64
        public var end: UInt64

        /// Creates a stall-retimed record.
        public init(id: UInt64, start: UInt64, end: UInt64) {
            self.id = id
            self.start = start
            self.end = end
        }
    }

    /// What the app said of a stall: the `expectLong` scope it ran in, and the app's state
    /// (`AppState`) when it was detected, keys in order.
    public struct StallContext: Sendable, Hashable {
        /// The `StallBegan.id`.
        public var id: UInt64
        /// The expected-long scope's label, if the work was marked so.
        public var expected: String?
        /// The app's keys and values, sorted by key.
        public var state: [KeyValue]

        /// One key and its value.
        public struct KeyValue: Sendable, Hashable {
            public var key: String
            public var value: String

            /// Creates a pair.
            public init(key: String, value: String) {
                self.key = key
                self.value = value
            }
        }

        /// Creates a stall-context record.
        public init(id: UInt64, expected: String?, state: [KeyValue]) {
            self.id = id
            self.expected = expected
            self.state = state
        }

        /// The key of the pair that stands for the keys left out (`keptPairs`).
        public static let cutKey = "…"

        /// How many of `state`'s first pairs the encoder keeps: as many as fit in 512 KiB (each
        /// string cut to `TraceFormat.maxStringBytes` as usual), so that no app state makes a
        /// record longer than `TraceFormat.maxPayloadLength`, which a reader refuses. The pairs
        /// left out are replaced by one pair, `cutKey`, that says how many there were.
        static func keptPairs(of state: [KeyValue]) -> Int {
            let room = TraceFormat.maxPayloadLength / 2
            var used = 0
            for (index, pair) in state.enumerated() {
                // Two strings of at most maxStringBytes, each with a length of at most 3 bytes.
                used += min(pair.key.utf8.count, TraceFormat.maxStringBytes) + 3
                used += min(pair.value.utf8.count, TraceFormat.maxStringBytes) + 3
                if used > room { return index }
            }
            return state.count
        }
    }

    /// One callout, stalled or not (`full` mode).
    public struct Callout: Sendable, Hashable {
        /// The `CallSite.id`.
        public var site: UInt64
        /// The `ModeName.id`.
        public var mode: UInt16
        /// When it started.
        public var start: UInt64
        /// How long it ran, in nanoseconds.
        public var duration: UInt64

        /// Creates a callout record.
        public init(site: UInt64, mode: UInt16, start: UInt64, duration: UInt64) {
            self.site = site
            self.mode = mode
            self.start = start
            self.duration = duration
        }
    }

    /// Congested loop iterations (callouts that together, not singly, overran the budget).
    public struct Congestion: Sendable, Hashable {
        /// The interval's start.
        public var intervalStart: UInt64
        /// The interval's length, in nanoseconds.
        public var intervalLength: UInt64
        /// Congested iterations in the interval.
        public var count: UInt64

        /// Creates a congestion record.
        public init(intervalStart: UInt64, intervalLength: UInt64, count: UInt64) {
            self.intervalStart = intervalStart
            self.intervalLength = intervalLength
            self.count = count
        }
    }

    /// What a frame clock managed over an interval.
    public struct FrameClock: Sendable, Hashable {
        /// The interval's start.
        public var intervalStart: UInt64
        /// The interval's length, in nanoseconds.
        public var intervalLength: UInt64
        /// Frames due in the interval.
        public var expected: UInt64
        /// Frames delivered.
        public var delivered: UInt64
        /// Frames dropped because the loop was busy.
        public var dropped: UInt64

        /// Creates a frame-clock summary.
        public init(
            intervalStart: UInt64, intervalLength: UInt64, expected: UInt64, delivered: UInt64,
            dropped: UInt64
        ) {
            self.intervalStart = intervalStart
            self.intervalLength = intervalLength
            self.expected = expected
            self.delivered = delivered
            self.dropped = dropped
        }
    }

    /// Loop latencies over an interval, in `LatencyBuckets` (only non-empty buckets are kept).
    public struct LatencyHistogram: Sendable, Hashable {
        /// The interval's start.
        public var intervalStart: UInt64
        /// The interval's length, in nanoseconds (normally one second).
        public var intervalLength: UInt64
        /// Non-empty buckets, by increasing `index`; every count is at least 1.
        public var buckets: [LatencyBuckets.Bucket]

        /// Creates a histogram record.
        public init(intervalStart: UInt64, intervalLength: UInt64, buckets: [LatencyBuckets.Bucket]) {
            self.intervalStart = intervalStart
            self.intervalLength = intervalLength
            self.buckets = buckets
        }
    }

    /// Records the recorder dropped (its ring was full) since the previous such record.
    public struct LostRecords: Sendable, Hashable {
        /// When the recorder could write again.
        public var time: UInt64
        /// How many records were dropped.
        public var count: UInt64

        /// Creates a lost-record counter.
        public init(time: UInt64, count: UInt64) {
            self.time = time
            self.count = count
        }
    }

    /// A loop iteration whose callouts together overran the frame budget while none alone was
    /// a stall (the loop counts these as congestion): when, how long, and in `full` mode the
    /// call sites whose callouts took its time.
    public struct CongestedIteration: Sendable, Hashable {
        /// One call site's share of the iteration.
        public struct SiteTime: Sendable, Hashable {
            /// The `CallSite` id.
            public var site: UInt64
            /// How many of its callouts ran in the iteration.
            public var count: UInt64
            /// Their summed duration, in nanoseconds.
            public var nanos: UInt64

            /// Creates a site's share.
            public init(site: UInt64, count: UInt64, nanos: UInt64) {
                self.site = site
                self.count = count
                self.nanos = nanos
            }
        }

        /// When the iteration's first callout started.
        public var start: UInt64
        /// From then to the iteration's end, in nanoseconds.
        public var duration: UInt64
        /// How many callouts ran in it (0 when callouts are not recorded: `stalls` mode).
        public var callouts: UInt64
        /// The sites that took most of its time, largest first (at most
        /// `CongestedIteration.maxSites`; empty in `stalls` mode).
        public var sites: [SiteTime]

        /// The most sites a record keeps.
        public static let maxSites = 8

        /// Creates a congested-iteration record.
        public init(start: UInt64, duration: UInt64, callouts: UInt64, sites: [SiteTime]) {
            self.start = start
            self.duration = duration
            self.callouts = callouts
            self.sites = sites
        }
    }

    /// What the loop ran in the window before a stall began, from the recorder's flight
    /// recorder (the callouts of the last seconds, kept in memory in every mode): how many
    /// callouts ended in it and their time, the call sites that took most of it, and the last
    /// callouts one by one.
    public struct StallLeadUp: Sendable, Hashable {
        /// One of the last callouts before the stall.
        public struct Recent: Sendable, Hashable {
            /// The `CallSite` id.
            public var site: UInt64
            /// How long before the stall's start it started, in nanoseconds.
            public var before: UInt64
            /// How long it ran, in nanoseconds.
            public var duration: UInt64

            /// Creates one recent callout.
            public init(site: UInt64, before: UInt64, duration: UInt64) {
                self.site = site
                self.before = before
                self.duration = duration
            }
        }

        /// The `StallBegan.id`.
        public var id: UInt64
        /// How far back the window reaches from the stall's start, in nanoseconds: the
        /// recorder's window, or less when the recording (or the stall before) began later.
        public var window: UInt64
        /// How many callouts ended in the window.
        public var callouts: UInt64
        /// Their summed duration, in nanoseconds: the loop's busy time in the window.
        public var busy: UInt64
        /// Callout events the recorder's ring dropped while the window was kept (0: complete).
        public var lost: UInt64
        /// The sites that took most of the window's time, largest first (at most
        /// `StallLeadUp.maxSites`).
        public var sites: [CongestedIteration.SiteTime]
        /// The last callouts before the stall, oldest first (at most `StallLeadUp.maxRecent`).
        public var recent: [Recent]

        /// The most sites a record keeps.
        public static let maxSites = 8
        /// The most recent callouts a record lists.
        public static let maxRecent = 16

        /// Creates a lead-up record.
        public init(
            id: UInt64, window: UInt64, callouts: UInt64, busy: UInt64, lost: UInt64,
            sites: [CongestedIteration.SiteTime], recent: [Recent]
        ) {
            self.id = id
            self.window = window
            self.callouts = callouts
            self.busy = busy
            self.lost = lost
            self.sites = sites
            self.recent = recent
        }
    }
}
