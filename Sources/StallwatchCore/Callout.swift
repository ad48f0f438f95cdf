/// A run-loop activity, in CFRunLoop order. The run loop reports these to observers, and
/// each callout records the phase it ran in.
///
/// Raw values are stable (trace files store them). A plain value; use it on any thread.
public enum LoopActivity: UInt8, CaseIterable, Sendable, Hashable, Codable {
    /// The loop is being entered (once per `run`).
    case entry = 1
    /// The loop is about to fire due timers.
    case beforeTimers
    /// The loop is about to run posted work and ready sources.
    case beforeSources
    /// The loop is about to block waiting for work.
    case beforeWaiting
    /// The loop has just woken from its wait.
    case afterWaiting
    /// The loop is being left.
    case exit
}

/// The kind of work a callout ran. Raw values are stable (trace files store them).
///
/// A plain value; use it on any thread.
public enum CalloutKind: UInt8, CaseIterable, Sendable, Hashable, Codable {
    /// A closure given to `post`.
    case post = 1
    /// A timer firing.
    case timer
    /// A file-descriptor source that became ready.
    case source
    /// An observer called for a loop activity.
    case observer
    /// One drain of the libdispatch main queue (`DispatchQueue.main`, `@MainActor` jobs).
    case mainQueue
}

/// Where the work of a callout came from: what a stall is blamed on before any sample.
///
/// A plain value; use it on any thread.
public struct CalloutIdentity: Sendable, Hashable, Codable {
    /// The kind of callout.
    public var kind: CalloutKind
    /// The optional label given when the work was registered.
    public var label: String?
    /// The `#fileID` of the code that registered the work (e.g. `"MyApp/Feed.swift"`).
    public var file: String
    /// The `#line` of the code that registered the work.
    public var line: UInt32
    /// The run-loop mode the callout ran in (e.g. `"default"`).
    public var mode: String
    /// The loop phase the callout ran in.
    public var phase: LoopActivity

    /// Creates a callout identity.
    public init(
        kind: CalloutKind,
        label: String? = nil,
        file: String,
        line: UInt32,
        mode: String = "default",
        phase: LoopActivity
    ) {
        self.kind = kind
        self.label = label
        self.file = file
        self.line = line
        self.mode = mode
        self.phase = phase
    }
}
