extension TraceMode {
    /// The mode's name as `STALLWATCH_MODE`, `stallwatch record --mode` and JSON reports spell
    /// it: `stalls` or `full`. Pure; any thread.
    public var name: String {
        switch self {
        case .stalls: "stalls"
        case .full: "full"
        }
    }

    /// The mode named `name` (`stalls` or `full`), or `nil` for any other text. Pure; any
    /// thread.
    public init?(name: String) {
        guard let mode = TraceMode.allCases.first(where: { $0.name == name }) else { return nil }
        self = mode
    }
}
