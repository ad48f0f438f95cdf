// The JSON form of rules. Decoding is strict (unknown keys, unknown names and empty
// matches are errors) because a typo in a lenient decoder silently yields a rule that
// matches everything or nothing.

import StallwatchCore

extension ClassificationRule: Codable {
    private enum Keys: String, CodingKey, CaseIterable {
        case name, level, category, reason, reasonFrom, match
    }

    /// Decodes a rule from its rules-file form, rejecting unknown keys and names.
    public init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(in: decoder, allowed: Keys.allCases.map(\.rawValue))
        let container = try decoder.container(keyedBy: Keys.self)
        let name = try container.decode(String.self, forKey: .name)
        if name.isEmpty { throw invalid(container, .name, "must not be empty") }
        let level = try container.decodeIfPresent(String.self, forKey: .level).map {
            guard let level = RuleLevel(rawValue: $0) else {
                throw invalid(container, .level, unknown("level", $0, RuleLevel.allCases))
            }
            return level
        }
        let categoryName = try container.decode(String.self, forKey: .category)
        guard let category = StallCategory(rawValue: categoryName) else {
            throw invalid(
                container, .category, unknown("category", categoryName, StallCategory.allCases))
        }
        let reason = try container.decodeIfPresent(String.self, forKey: .reason)
        if reason?.isEmpty == true { throw invalid(container, .reason, "must not be empty") }
        let reasonFrom = try container.decodeIfPresent(String.self, forKey: .reasonFrom).map {
            guard let source = ReasonSource(rawValue: $0) else {
                throw invalid(
                    container, .reasonFrom, unknown("reasonFrom", $0, ReasonSource.allCases))
            }
            return source
        }
        let match = try container.decode(RuleMatch.self, forKey: .match)
        if !match.testsFrames && !match.testsState {
            throw invalid(container, .match, "must test at least one frame or state field")
        }
        if (reasonFrom == .matchInnermost || reasonFrom == .matchOutermost) && !match.testsFrames {
            throw invalid(container, .reasonFrom, "'\(reasonFrom!.rawValue)' needs a frame condition")
        }
        self.init(
            name: name, level: level, category: category, reason: reason,
            reasonFrom: reasonFrom, match: match)
    }

    /// Encodes the rule in its rules-file form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(name, forKey: .name)
        try container.encode(level.rawValue, forKey: .level)
        try container.encode(category.rawValue, forKey: .category)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encode(reasonFrom.rawValue, forKey: .reasonFrom)
        try container.encode(match, forKey: .match)
    }
}

extension RuleMatch: Codable {
    private enum Keys: String, CodingKey, CaseIterable {
        case symbol, symbolPrefix, symbolContains, module, maxDepth, state, syscall, cpu, minDelta, wait
    }

    /// Decodes conditions; each list may also be given as a single string.
    public init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(in: decoder, allowed: Keys.allCases.map(\.rawValue))
        let container = try decoder.container(keyedBy: Keys.self)
        func list(_ key: Keys) throws -> [String] {
            guard container.contains(key) else { return [] }
            let values: [String]
            if let single = try? container.decode(String.self, forKey: key) {
                values = [single]
            } else {
                values = try container.decode([String].self, forKey: key)
            }
            if values.contains(where: \.isEmpty) {
                throw invalid(container, key, "must not contain an empty string")
            }
            return values
        }
        // Numbers are read as JSON numbers and then checked, so that 1.5, -5 or 1e20 is told
        // as what it is, at its field (an integer decode failed as "not valid JSON").
        let maxDepth = try container.decodeIfPresent(Double.self, forKey: .maxDepth).map { value in
            try wholeNumber(value, from: 1, upTo: Double(Int32.max)) { invalid(container, .maxDepth, $0) }
        }
        var states: [ThreadState] = []
        for name in try list(.state) {
            guard let state = ThreadState(ruleName: name) else {
                let names = ThreadState.allCases.map(\.name).joined(separator: ", ")
                throw invalid(
                    container, .state,
                    "unknown state '\(name)' (expected one of \(names), or a /proc letter)")
            }
            states.append(state)
        }
        let syscalls = try list(.syscall)
        for name in syscalls where name != CompiledRule.outsideSyscall && SyscallTable.number(for: name) == nil {
            throw invalid(container, .syscall, "unknown x86_64 syscall '\(name)'")
        }
        let cpu = try container.decodeIfPresent(String.self, forKey: .cpu).map {
            guard let share = CPUShare(rawValue: $0) else {
                throw invalid(container, .cpu, unknown("cpu", $0, CPUShare.allCases))
            }
            return share
        }
        var minDelta: [KernelCounter: UInt64] = [:]
        for (name, number) in try container.decodeIfPresent([String: Double].self, forKey: .minDelta) ?? [:] {
            guard let counter = KernelCounter(rawValue: name) else {
                throw invalid(container, .minDelta, unknown("counter", name, KernelCounter.allCases))
            }
            let value = try wholeNumber(number, from: 1, upTo: 1e18) {
                invalid(container, .minDelta, "'\(name)' \($0)")
            }
            minDelta[counter] = UInt64(value)
        }
        var waits: [WaitFact.Kind] = []
        for name in try list(.wait) {
            guard let kind = WaitFact.Kind(name: name) else {
                let names = WaitFact.Kind.allCases.map(\.name).joined(separator: ", ")
                throw invalid(container, .wait, "unknown wait kind '\(name)' (expected one of \(names))")
            }
            waits.append(kind)
        }
        self.init(
            symbol: try list(.symbol), symbolPrefix: try list(.symbolPrefix),
            symbolContains: try list(.symbolContains), module: try list(.module),
            maxDepth: maxDepth, state: states, syscall: syscalls, cpu: cpu, minDelta: minDelta, wait: waits)
        if maxDepth != nil && !testsFrames {
            throw invalid(container, .maxDepth, "needs a frame condition")
        }
    }

    /// Encodes the conditions given, as lists.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        func put(_ values: [String], _ key: Keys) throws {
            if !values.isEmpty { try container.encode(values, forKey: key) }
        }
        try put(symbol, .symbol)
        try put(symbolPrefix, .symbolPrefix)
        try put(symbolContains, .symbolContains)
        try put(module, .module)
        try container.encodeIfPresent(maxDepth, forKey: .maxDepth)
        try put(state.map(\.name), .state)
        try put(syscall, .syscall)
        try container.encodeIfPresent(cpu?.rawValue, forKey: .cpu)
        try put(wait.map(\.name), .wait)
        if !minDelta.isEmpty {
            try container.encode(
                Dictionary(uniqueKeysWithValues: minDelta.map { ($0.key.rawValue, $0.value) }), forKey: .minDelta)
        }
    }
}

extension ThreadState {
    /// Parses a rules-file state: a `name` (`"diskSleep"`) or a `/proc` letter (`"D"`).
    init?(ruleName: String) {
        if let state = ThreadState.allCases.first(where: { $0.name == ruleName }) {
            self = state
        } else if ruleName.count == 1, let letter = ruleName.first,
            ThreadState(procCode: letter) != .unknown
        {
            self.init(procCode: letter)
        } else {
            return nil
        }
    }
}

/// A coding key for any string, to list the keys an object really has.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}

func rejectUnknownKeys(in decoder: any Decoder, allowed: [String]) throws {
    let container = try decoder.container(keyedBy: AnyCodingKey.self)
    // Sorted so the error names the same key whatever order the decoder lists them in.
    let unknown = container.allKeys.map(\.stringValue).filter { !allowed.contains($0) }.sorted()
    if let key = unknown.first {
        throw DecodingError.dataCorrupted(
            .init(
                codingPath: container.codingPath + [AnyCodingKey(stringValue: key)],
                debugDescription:
                    "unknown field (expected one of \(allowed.joined(separator: ", ")))"))
    }
}

/// `value` as a whole number from `low` to `high`, or the error `fail` makes of what is wrong
/// with it ("must be a whole number from 1 to 2147483647, got 1.5").
private func wholeNumber(_ value: Double, from low: Double, upTo high: Double, _ fail: (String) -> DecodingError)
    throws -> Int
{
    guard value.rounded() == value, value >= low, value <= high else {
        let shown = value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
        throw fail("must be a whole number from \(Int64(low)) to \(Int64(high)), got \(shown)")
    }
    return Int(value)
}

private func invalid<Key: CodingKey>(
    _ container: KeyedDecodingContainer<Key>, _ key: Key, _ message: String
) -> DecodingError {
    .dataCorrupted(.init(codingPath: container.codingPath + [key], debugDescription: message))
}

private func unknown<T: RawRepresentable<String>>(_ what: String, _ value: String, _ allowed: [T])
    -> String
{
    "unknown \(what) '\(value)' (expected one of \(allowed.map(\.rawValue).joined(separator: ", ")))"
}
