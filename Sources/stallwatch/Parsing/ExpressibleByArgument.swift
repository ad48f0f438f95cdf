import StallwatchCore

/// A type an `@Option` or `@Argument` can hold: built from one command-line word, as in
/// swift-argument-parser. A word that does not convert is a usage error that quotes the word,
/// names the option as typed and ends in `expectation`:
/// `The value 'x' is invalid for '--top': expected a whole number of at least 0`.
protocol ExpressibleByArgument {
    /// The value `argument` spells, or `nil` if it spells none.
    init?(argument: String)
    /// What a valid word looks like, for the error message (`stalls or full`).
    static var expectation: String { get }
    /// How a default value appears in help (`(default: 10)`).
    var defaultValueDescription: String { get }
}

extension ExpressibleByArgument where Self: CustomStringConvertible {
    var defaultValueDescription: String { description }
}

extension String: ExpressibleByArgument {
    init?(argument: String) { self = argument }
    static var expectation: String { "a value" }
}

/// Every integer `stallwatch` takes is a count, so negative numbers are refused.
extension Int: ExpressibleByArgument {
    init?(argument: String) {
        guard let value = Int(argument), value >= 0 else { return nil }
        self = value
    }
    static var expectation: String { "a whole number of at least 0" }
}

extension UInt64: ExpressibleByArgument {
    init?(argument: String) { self.init(argument) }
    static var expectation: String { "a whole number from 0 to \(UInt64.max)" }
}

/// Thresholds and percentages: finite and not negative.
extension Double: ExpressibleByArgument {
    init?(argument: String) {
        guard let value = Double(argument), value.isFinite, value >= 0 else { return nil }
        self = value
    }
    static var expectation: String { "a number of at least 0" }
    var defaultValueDescription: String { plainNumber(self) }
}

/// A budget: a number of milliseconds (`8`, `16.667`), to the nanosecond, up to a day (what
/// the recorded program's environment accepts too). Zero converts, so that a command's
/// `validate()` can say "above 0" about it.
extension Duration: ExpressibleByArgument {
    init?(argument: String) {
        guard let milliseconds = Double(argument), milliseconds.isFinite, milliseconds >= 0,
            milliseconds <= Self.longestMilliseconds
        else { return nil }
        self = .nanoseconds(Int64((milliseconds * 1e6).rounded()))
    }
    /// A day, in milliseconds.
    static let longestMilliseconds = 86_400_000.0
    static var expectation: String { "a number of milliseconds from 0 to \(Int(longestMilliseconds)) (a day)" }
    /// Milliseconds to the microsecond: `16.667`.
    var defaultValueDescription: String { plainNumber(Double((nanoseconds + 500) / 1_000) / 1_000) }

    /// The duration in milliseconds as a person types them, to the nanosecond: `8`, `16.6667`.
    var plainMilliseconds: String { plainNumber(Double(nanoseconds) / 1e6) }
}

extension TraceMode: ExpressibleByArgument {
    init?(argument: String) { self.init(name: argument) }
    static var expectation: String {
        TraceMode.allCases.map(\.name).joined(separator: " or ")
    }
    var defaultValueDescription: String { name }
}

/// A number the way a person types it: `8`, `12.5`.
func plainNumber(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
}
