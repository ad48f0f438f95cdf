/// How the chain of awaiting callers of a sample in async code ended (docs/async.md). The raw
/// values are the bytes the trace stores (`sampleAsyncChain` records, kind 27) and the C
/// sampler's `SW_ASYNC_END_*` codes.
///
/// A plain value; use it on any thread.
public enum AsyncChainEnd: UInt8, Sendable, Hashable, Codable, CaseIterable {
    /// The chain reached the task's root context: every awaiting caller is in the sample.
    case taskRoot = 1
    /// A context could not be read (the task ended, or the memory was reused): the chain stops
    /// at the last caller read.
    case unreadable = 2
    /// The chain was longer than the sampler keeps; its outermost callers are missing.
    case truncated = 3

    /// What a reader is shown after the last async frame (`"task root"`, `"chain unreadable"`,
    /// `"chain truncated"`).
    public var marker: String {
        switch self {
        case .taskRoot: "task root"
        case .unreadable: "chain unreadable"
        case .truncated: "chain truncated"
        }
    }
}
