/// Constants of the trace file format (`docs/trace-format.md`).
///
/// A trace is an 8-byte preamble (`magic`, then `version` as a little-endian `UInt16`, then two
/// zero bytes), followed by records. Each record is a kind byte, a LEB128 varint payload length
/// and the payload, so a reader skips kinds it does not know. Sync records, written every
/// `TraceEncoder.syncInterval` bytes or so, carry `syncPattern`; a reader scans for it to
/// resynchronise after a corrupt region.
///
/// Pure constants; use them on any thread.
public enum TraceFormat {
    /// The first four bytes of every trace: `"SWTR"`.
    public static let magic: (UInt8, UInt8, UInt8, UInt8) = (0x53, 0x57, 0x54, 0x52)

    /// `magic` as an array.
    public static let magicBytes: [UInt8] = [magic.0, magic.1, magic.2, magic.3]

    /// The version this code writes and the newest it reads. Adding a record kind does not
    /// change it (old readers skip the kind); changing the framing or an existing kind's
    /// payload does. Version 2 gave each sample its index in its stall, its thread and its look,
    /// and made the records about a sample name it by that index.
    public static let version: UInt16 = 2

    /// The oldest version this code reads (docs/trace-format.md, "Version 1").
    public static let oldestReadVersion: UInt16 = 1

    /// The size of the preamble: magic, version, two reserved zero bytes.
    public static let preambleSize = 8

    /// The largest payload a reader accepts. A length past it is corruption, not a big record:
    /// the encoder never writes one (strings are capped at `maxStringBytes`, samples at
    /// `maxFrames` frames).
    public static let maxPayloadLength = 1 << 20

    /// Strings longer than this many UTF-8 bytes are cut (at a character boundary) when encoded.
    public static let maxStringBytes = 65_535

    /// Samples keep at most this many frames (the innermost ones) when encoded.
    public static let maxFrames = 4_096

    /// The eight bytes that open every sync record's payload. `C3 3C` cannot occur inside a
    /// well-formed UTF-8 string, and the whole pattern is improbable in varint data.
    public static let syncPattern: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
        (0xA5, 0x5A, 0xC3, 0x3C, 0x96, 0x69, 0xF0, 0x0F)

    package static let syncPatternWord: UInt64 = 0x0FF0_6996_3CC3_5AA5

}

/// The kind id of a record: its first byte.
///
/// Ids are stable. Never reuse one: when a kind is retired, move it to the reserved list.
/// - Reserved: `0` (never a kind, so zero-filled bytes are caught as corruption);
///   `128...255` (kept for a future two-byte kind form; readers skip them like any
///   unknown kind).
/// - Next id: `nextID`. The table in docs/trace-format.md lists the same ids (a test compares
///   them).
///
/// A plain value; use it on any thread.
public enum TraceRecordKind: UInt8, CaseIterable, Sendable, Hashable {
    /// Process, clocks and configuration; once, at the start.
    case header = 1
    /// A sync marker: `TraceFormat.syncPattern` and the callout time base.
    case sync = 2
    /// One loaded image: index, load address, path, build id.
    case module = 3
    /// A call-site definition: id → callout kind, label, `#fileID`, line.
    case callSite = 4
    /// A run-loop mode name definition: id → name.
    case modeName = 5
    /// An annotation definition: id → label, category.
    case annotation = 6
    /// A symbolicated address: name, module index, file, line.
    case symbol = 7
    /// A stall was detected.
    case stallBegan = 8
    /// One sample of the main thread during a stall.
    case sample = 9
    /// A stall's callout returned.
    case stallEnded = 10
    /// One callout (`full` mode only); the compact, hottest record.
    case callout = 11
    /// Loop iterations whose callouts together overran the budget, over an interval.
    case congestion = 12
    /// Frames expected, delivered and dropped over an interval.
    case frameClock = 13
    /// A loop-latency histogram over an interval (log-linear buckets, sparse).
    case latencyHistogram = 14
    /// Records the recorder dropped because its ring was full.
    case lostRecords = 15
    /// The machine the trace was recorded on (architecture); once, after the header.
    case platform = 16
    /// Where one sample's stack came from (signal, perf, scan, stale, none).
    case sampleProvenance = 17
    /// A sample's kernel counters (`/proc/.../stat` and `io`) and their delta; follows it.
    case sampleCounters = 18
    /// What a sample's thread waited on (file, socket peer, mutex owner, SQL); follows it.
    case sampleWait = 19
    /// Where the trace comes from (trace id, host, executable, build id, app version); once,
    /// after the platform record.
    case origin = 20
    /// One loop iteration that overran the budget through several callouts, none a stall:
    /// its time and (`full` mode) the call sites that took it.
    case congestedIteration = 21
    /// A stall's start and end as the executor itself timed them (its own tick), which the
    /// monitor learned after the stall ended; they replace `stallBegan`'s start and `stallEnded`'s end.
    case stallRetimed = 22
    /// What the app said of a stall: work expected to be long (`expectLong`), and the app's
    /// state (`AppState`) when it was detected.
    case stallContext = 23
    /// The recording was running at this time: written every second and when it stops, so a
    /// reader's run time ends at the last one, whatever the loop did and however it ended.
    case recordedUntil = 24
    /// What the loop ran in the seconds before a stall (the flight recorder): callouts and
    /// busy time in the window, the sites that took it, the last callouts one by one.
    case stallLeadUp = 25
    /// The process was stopped (SIGSTOP, a debugger) over an interval: time that is not the
    /// app's, left out of stalls, run time and dropped frames.
    case stopped = 26
    /// Which of a sample's frames are awaiting callers from its async context chain, and how
    /// the chain ended; follows its sample.
    case sampleAsyncChain = 27

    /// An executor the recording watched, how, and from when (or, once, that the process ran
    /// nothing Stallwatch could watch): so a trace with no stalls says whether anything was
    /// looked at.
    case watched = 28

    /// The id the next new kind gets.
    public static let nextID: UInt8 = 29

    /// Ids that are not kinds and must never become kinds.
    public static let reservedIDs: [ClosedRange<UInt8>] = [0...0, 128...255]

    /// A lower-case name for messages (`"callout"`, `"stallBegan"`…).
    public var name: String {
        switch self {
        case .header: "header"
        case .sync: "sync"
        case .module: "module"
        case .callSite: "callSite"
        case .modeName: "modeName"
        case .annotation: "annotation"
        case .symbol: "symbol"
        case .stallBegan: "stallBegan"
        case .sample: "sample"
        case .stallEnded: "stallEnded"
        case .callout: "callout"
        case .congestion: "congestion"
        case .frameClock: "frameClock"
        case .latencyHistogram: "latencyHistogram"
        case .lostRecords: "lostRecords"
        case .platform: "platform"
        case .origin: "origin"
        case .sampleProvenance: "sampleProvenance"
        case .congestedIteration: "congestedIteration"
        case .recordedUntil: "recordedUntil"
        case .stallLeadUp: "stallLeadUp"
        case .sampleCounters: "sampleCounters"
        case .sampleWait: "sampleWait"
        case .stallRetimed: "stallRetimed"
        case .stallContext: "stallContext"
        case .stopped: "stopped"
        case .sampleAsyncChain: "sampleAsyncChain"
        case .watched: "watched"
        }
    }
}

/// Whether a trace records only stalls or every callout too.
///
/// Raw values are stable (trace files store them). A plain value; use it on any thread.
public enum TraceMode: UInt8, CaseIterable, Sendable, Hashable, Codable {
    /// Stalls, their samples and the per-interval summaries.
    case stalls = 1
    /// Everything in `stalls`, plus one `callout` record per callout.
    case full = 2
}
