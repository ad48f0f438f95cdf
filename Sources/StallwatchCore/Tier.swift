/// How bad a stall is, by duration. Ordered from mildest (`hitch`) to worst (`severe`).
///
/// The raw values are stable: they appear in JSON reports (also as dictionary keys).
/// A plain value; use it on any thread.
public enum Tier: String, CaseIterable, Comparable, Sendable, Hashable, Codable, CodingKeyRepresentable {
    /// Longer than the frame budget (one frame dropped or more), shorter than a micro hang.
    case hitch
    /// At least 100 ms by default: a user notices the delay.
    case microHang
    /// At least 250 ms by default: the app feels stuck.
    case hang
    /// At least 1 s by default.
    case severe

    /// Orders tiers by severity: `hitch < microHang < hang < severe`.
    public static func < (lhs: Tier, rhs: Tier) -> Bool {
        lhs.ordinal < rhs.ordinal
    }

    /// The tier's position in `allCases`, mildest first (an exhaustive switch: a new tier is a
    /// compile error here until it has its place).
    package var ordinal: Int {
        switch self {
        case .hitch: 0
        case .microHang: 1
        case .hang: 2
        case .severe: 3
        }
    }
}

/// The frame budget and the duration at which each `Tier` begins.
///
/// Defaults are Apple's numbers: budget 1/60 s, micro hang 100 ms, hang 250 ms, severe 1 s.
/// A plain value; use it on any thread.
public struct TierThresholds: Sendable, Hashable, Codable {
    /// A callout that runs longer than this is a stall (`hitch` at least). Default 1/60 s.
    public var budget: Duration
    /// Stalls at least this long are `microHang`s. Default 100 ms.
    public var microHang: Duration
    /// Stalls at least this long are `hang`s. Default 250 ms.
    public var hang: Duration
    /// Stalls at least this long are `severe`. Default 1 s.
    public var severe: Duration

    /// Creates thresholds; every argument defaults to Apple's number.
    public init(
        budget: Duration = .nanoseconds(16_666_667),
        microHang: Duration = .milliseconds(100),
        hang: Duration = .milliseconds(250),
        severe: Duration = .seconds(1)
    ) {
        self.budget = budget
        self.microHang = microHang
        self.hang = hang
        self.severe = severe
    }

    /// The default thresholds (60 Hz budget, 100 ms, 250 ms, 1 s).
    public static let `default` = TierThresholds()

    /// The tier of a callout that ran for `duration`, or `nil` if it stayed within budget.
    ///
    /// Exactly the budget is not a stall; exactly a threshold belongs to that tier.
    @inlinable
    public func tier(for duration: Duration) -> Tier? {
        if duration <= budget { return nil }
        if duration >= severe { return .severe }
        if duration >= hang { return .hang }
        if duration >= microHang { return .microHang }
        return .hitch
    }
}

extension Tier {
    // The raw-value defaults compare and hash the name, a String (as `StallCategory`'s did):
    // a fleet report counts stalls by tier in dictionaries.

    /// Whether two tiers are the same case. Pure; any thread.
    public static func == (lhs: Tier, rhs: Tier) -> Bool { lhs.ordinal == rhs.ordinal }

    /// Hashes the case, not its name. Pure; any thread.
    public func hash(into hasher: inout Hasher) { hasher.combine(ordinal) }
}
