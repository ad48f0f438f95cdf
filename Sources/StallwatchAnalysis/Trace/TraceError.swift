import StallwatchCore

/// A problem found while decoding a trace: where (file and byte offset), what, and how many
/// bytes the decoder skipped to get past it. Its `description` is one readable line, e.g.
/// `app.swtrace: byte 4242: callout record is malformed: field 'duration' runs past the
/// record's end; skipped 310 bytes to the next sync marker`.
///
/// A plain value; use it on any thread.
public struct TraceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Problem: Sendable, Hashable, CustomStringConvertible {
        /// The input does not start with the trace magic: not a trace, or its first bytes are
        /// damaged.
        case badPreamble
        /// The trace was written by a newer version of the format.
        case unsupportedVersion(UInt16)
        /// The input ends inside a record (`kind` is `nil` inside the preamble or a record's
        /// kind and length).
        case truncated(kind: UInt8?)
        /// A record has a reserved kind id (0: usually zero-filled bytes).
        case reservedKind(UInt8)
        /// A record's length is not a varint, is over `TraceFormat.maxPayloadLength`, or runs
        /// past the end of the input though more records follow.
        case badLength(kind: UInt8, reason: String)
        /// A known record's payload does not parse.
        case malformedRecord(kind: UInt8, reason: String)
        /// The input ends in bytes that are not records, with no sync marker and no whole
        /// record after them: the zero-filled or garbage tail a crash or power loss leaves
        /// after the last write. A truncation, like `truncated`.
        case junkTail(zeroFilled: Bool)
        /// A sync marker whose sequence is not above the previous marker's: records repeated
        /// (a copy that wrote some twice) or two traces' records mixed; `later` more such
        /// markers follow (each one is not reported again).
        case repeatedSync(sequence: UInt64, previous: UInt64, later: Int)
        /// A header after the first: the same one again (`process` nil: records repeated) or
        /// another process's (two traces joined).
        case secondHeader(process: String?, pid: UInt32)
        /// A trace's preamble where a record should start: two trace files joined end to end.
        case secondPreamble
        /// Records that say again what earlier ones said (the same stall begun twice, a sample
        /// of a stall at the same time twice, a summary over time already summarised), each
        /// counted once: `what` says which, and how many.
        case repeatedRecords(what: String)

        /// One line saying what is wrong.
        public var description: String {
            switch self {
            case .badPreamble:
                "does not start with the trace magic \"SWTR\" and a version"
            case .unsupportedVersion(let version):
                "format version \(version) is not supported (this reader knows \(TraceFormat.oldestReadVersion)...\(TraceFormat.version))"
            case .truncated(nil):
                "the input ends inside a record header"
            case .truncated(let kind?):
                "the input ends inside a \(kindName(kind)) record"
            case .reservedKind(let kind):
                "record kind \(kind) is reserved\(kind == 0 ? " (zero-filled bytes?)" : "")"
            case .badLength(let kind, let reason):
                "\(kindName(kind)) record has a bad length: \(reason)"
            case .malformedRecord(let kind, let reason):
                "\(kindName(kind)) record is malformed: \(reason)"
            case .junkTail(true):
                "the input ends in zero-filled bytes, not records (as a crash or power loss leaves)"
            case .junkTail(false):
                "the input ends in bytes that are not records and hold no sync marker "
                    + "(as a crash or power loss leaves)"
            case .repeatedSync(let sequence, let previous, let later):
                "sync marker \(sequence) follows marker \(previous)"
                    + (later > 0 ? " (and \(later) more out of order after it)" : "")
                    + ": records repeated, or two traces mixed"
            case .secondHeader(nil, _):
                "the trace's header again: records repeated"
            case .secondHeader(let process?, let pid):
                "a second trace's header (\(process), pid \(pid)): two traces joined end to end"
            case .secondPreamble:
                "a second trace starts here (its preamble): two trace files joined end to end"
            case .repeatedRecords(let what):
                what
            }
        }
    }

    /// The file the trace came from, if known.
    public var fileName: String?
    /// The byte offset (from the start of the input) where the problem starts; for
    /// `repeatedRecords`, found once every record is read, the input's length.
    public var offset: Int
    /// What went wrong.
    public var problem: Problem
    /// How many bytes from `offset` the decoder skipped: to the next sync marker, or to the
    /// end of the input.
    public var skippedBytes: Int
    /// Whether the decoder went on after this problem (it found a sync marker).
    public var resumed: Bool

    /// Creates an error.
    public init(
        fileName: String? = nil, offset: Int, problem: Problem, skippedBytes: Int = 0,
        resumed: Bool = false
    ) {
        self.fileName = fileName
        self.offset = offset
        self.problem = problem
        self.skippedBytes = skippedBytes
        self.resumed = resumed
    }

    /// One line: `file: byte N: problem; what the decoder did`.
    public var description: String {
        if case .repeatedRecords = problem { return "\(fileName ?? "the trace"): \(problem); each counted once" }
        let place = fileName.map { "\($0): byte \(offset)" } ?? "byte \(offset)"
        let action: String
        switch problem {
        case .repeatedSync, .secondHeader:
            action = "read on as one trace, so its figures may count records twice"
        case .secondPreamble:
            action = "read on as one trace; split the file to read each"
        case .truncated: action = "the last \(skippedBytes) bytes are an incomplete record"
        case .junkTail: action = "ignored the last \(skippedBytes) bytes"
        case .unsupportedVersion: action = "nothing decoded"
        default:
            action =
                resumed
                ? "skipped \(skippedBytes) bytes to the next sync marker"
                : "skipped the remaining \(skippedBytes) bytes (no sync marker after it)"
        }
        return "\(place): \(problem); \(action)"
    }
}

/// How decoding a trace went, once the decoder has reached the end of its input.
///
/// A plain value; use it on any thread.
public struct TraceOutcome: Sendable, Hashable {
    /// Records decoded (sync records included, unknown kinds not).
    public var recordCount = 0
    /// Well-formed records of kinds this reader does not know, skipped.
    public var unknownRecordCount = 0
    /// Every problem, in input order. At most the last is a truncation (`truncated` or
    /// `junkTail`).
    public var problems: [TraceError] = []

    /// Creates an empty outcome.
    public init() {}

    /// Whether the input was a whole, undamaged trace.
    public var endedCleanly: Bool { problems.isEmpty }

    /// The truncation, if the input ended inside a record or in a junk tail; its offset is
    /// where the incomplete record or the junk starts (the decoded records are everything
    /// before it).
    public var truncation: TraceError? {
        guard let last = problems.last, last.problem.isTruncation else { return nil }
        return last
    }

    /// The corrupt regions (every problem that is not the final truncation).
    public var corruptRegions: [TraceError] {
        problems.filter { !$0.problem.isTruncation }
    }
}

extension TraceError.Problem {
    /// Whether the problem ends the input (nothing after it was lost but junk or a cut record).
    var isTruncation: Bool {
        switch self {
        case .truncated, .junkTail: true
        default: false
        }
    }
}

func kindName(_ kind: UInt8) -> String {
    TraceRecordKind(rawValue: kind).map(\.name) ?? "kind-\(kind)"
}
