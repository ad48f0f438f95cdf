import StallwatchCore

/// Which precedence level a rule belongs to. An annotation's category beats every rule;
/// then all `stack` rules are tried, then all `state` rules.
///
/// A plain value; use it on any thread.
public enum RuleLevel: String, CaseIterable, Sendable, Hashable, Codable {
    /// Decided by the backtrace (SQLite frames, lock functions, the idle wait…).
    case stack
    /// Decided by the kernel's view (state letter, syscall) or by the syscall wrapper at the
    /// top of the stack.
    case state
}

/// Where a matching rule takes the sample's reason from, when the rule has no fixed `reason`.
///
/// A plain value; use it on any thread.
public enum ReasonSource: String, CaseIterable, Sendable, Hashable, Codable {
    /// The innermost frame that matched the rule (default for rules that test frames).
    case matchInnermost
    /// The outermost frame that matched the rule: the API the app called, such as
    /// `sqlite3_step` rather than `sqlite3VdbeExec`.
    case matchOutermost
    /// The innermost app (non-system) frame, else the innermost named frame, else `kernel`.
    case appFrame
    /// The syscall name, else the wait channel, else the state name (default for rules that
    /// test only the kernel state).
    case kernel
    /// The wait-for fact's operation (the syscall it came from, e.g. `read`), else its kind;
    /// without a fact, as `kernel`.
    case wait
}

/// The conditions of a rule. Every condition given must hold.
///
/// Frame conditions: a frame matches when its symbol passes any of `symbol`,
/// `symbolPrefix`, `symbolContains` (if any of them is given) **and** its module passes
/// `module` (if given). The rule's frame condition holds when a frame among the innermost
/// `maxDepth` (all frames if `nil`) matches. State conditions: the sample's `state` is one
/// of `state`, and its syscall is one of `syscall`. Counter conditions test the sample's
/// `countersDelta` (a sample without one fails them): `cpu` says which CPU time grew more,
/// `minDelta` gives counters that must each have grown by at least the value given. `wait`
/// tests the kind of the sample's wait-for fact.
///
/// A plain value; use it on any thread.
public struct RuleMatch: Sendable, Hashable {
    /// Exact symbol names. C names also match without glibc decorations
    /// (`___pthread_mutex_lock`, `__libc_write`, `write@@GLIBC_2.2.5` match `pthread_mutex_lock`,
    /// `write`); Swift names also match without their return type
    /// (`Foundation.NSLock.lock() -> ()` matches `Foundation.NSLock.lock()`).
    public var symbol: [String]
    /// Symbol prefixes, tested on the same names as `symbol` and also on a Swift name
    /// without its module (`ImageDecoder.` matches `MyApp.ImageDecoder.decode(_:)`).
    public var symbolPrefix: [String]
    /// Substrings of the raw symbol.
    public var symbolContains: [String]
    /// Images: a name matches the module's file name exactly or up to a `.`
    /// (`libsqlite3` matches `…/libsqlite3.so.0`); a name containing `/` is a path prefix.
    public var module: [String]
    /// Only the innermost `maxDepth` frames are tested (`nil`: all of them).
    public var maxDepth: Int?
    /// Thread states (rules files spell them `running`, `sleeping`, `diskSleep`, … or
    /// by their `/proc` letter).
    public var state: [ThreadState]
    /// Syscall names from `SyscallTable` (`"fsync"`, `"futex"`…), or `"none"`: blocked
    /// outside any syscall (/proc says `-1`; in practice a page fault).
    public var syscall: [String]
    /// Which CPU time grew more since the previous sample (`nil`: not tested).
    public var cpu: CPUShare?
    /// Counters that must each have grown by at least the value given since the previous
    /// sample (`["readBytes": 1]`: bytes were fetched from storage). Empty: not tested.
    public var minDelta: [KernelCounter: UInt64]
    /// The sample's wait-for fact is of one of these kinds (empty: not tested).
    public var wait: [WaitFact.Kind]

    /// Creates conditions; every list defaults to empty (not tested).
    public init(
        symbol: [String] = [],
        symbolPrefix: [String] = [],
        symbolContains: [String] = [],
        module: [String] = [],
        maxDepth: Int? = nil,
        state: [ThreadState] = [],
        syscall: [String] = [],
        cpu: CPUShare? = nil,
        minDelta: [KernelCounter: UInt64] = [:],
        wait: [WaitFact.Kind] = []
    ) {
        self.symbol = symbol
        self.symbolPrefix = symbolPrefix
        self.symbolContains = symbolContains
        self.module = module
        self.maxDepth = maxDepth
        self.state = state
        self.syscall = syscall
        self.cpu = cpu
        self.minDelta = minDelta
        self.wait = wait
    }

    /// Whether any frame condition is given.
    public var testsFrames: Bool {
        !symbol.isEmpty || !symbolPrefix.isEmpty || !symbolContains.isEmpty || !module.isEmpty
    }

    /// Whether any kernel-state condition (state, syscall or counters) is given.
    public var testsState: Bool {
        !state.isEmpty || !syscall.isEmpty || testsCounters || !wait.isEmpty
    }

    /// Whether any counter condition is given.
    public var testsCounters: Bool {
        cpu != nil || !minDelta.isEmpty
    }
}

/// One classification rule: when `match` holds for a sample, the sample is `category`
/// for `reason`. Built-in rules and rules files use this same type and JSON form.
///
/// A plain value; use it on any thread.
public struct ClassificationRule: Sendable, Hashable {
    /// A unique, human-readable name, reported as `Classification.ruleName`.
    public var name: String
    /// The precedence level.
    public var level: RuleLevel
    /// The category a matching sample gets.
    public var category: StallCategory
    /// A fixed reason; `nil` derives it as `reasonFrom` says.
    public var reason: String?
    /// Where the reason comes from when `reason` is `nil`.
    public var reasonFrom: ReasonSource
    /// The conditions.
    public var match: RuleMatch

    /// Creates a rule. `level` defaults to `state` when `match` tests the kernel state and to
    /// `stack` otherwise; `reasonFrom` defaults to `matchInnermost` when `match` tests frames
    /// and to `kernel` otherwise.
    public init(
        name: String,
        level: RuleLevel? = nil,
        category: StallCategory,
        reason: String? = nil,
        reasonFrom: ReasonSource? = nil,
        match: RuleMatch
    ) {
        self.name = name
        self.level = level ?? (match.testsState ? .state : .stack)
        self.category = category
        self.reason = reason
        self.reasonFrom = reasonFrom ?? (match.testsFrames ? .matchInnermost : .kernel)
        self.match = match
    }
}
