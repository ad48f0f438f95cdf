import StallwatchCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Why a rules file (or the built-in rules) could not be loaded: which file, which rule,
/// which field, and what is wrong.
///
/// A plain value; use it on any thread.
public struct RulesFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The path of the file (`"<built-in>"` for the built-in rules).
    public var file: String
    /// The line (1-based) of the offending value in the file, when the file could be read.
    public var line: Int?
    /// The zero-based index of the offending rule in `rules`, if the problem is in one.
    public var ruleIndex: Int?
    /// The offending field, as a path inside the rule or file (`"match.syscall"`,
    /// `"category"`, `"version"`), if known.
    public var field: String?
    /// What is wrong.
    public var message: String

    /// Creates an error.
    public init(file: String, ruleIndex: Int? = nil, field: String? = nil, message: String) {
        self.file = file
        self.ruleIndex = ruleIndex
        self.field = field
        self.message = message
    }

    /// One line: `rules.json:9: rule 2, field 'category': unknown category 'db' (…)`.
    public var description: String {
        var location: [String] = []
        if let ruleIndex { location.append("rule \(ruleIndex)") }
        if let field { location.append("field '\(field)'") }
        let prefix = location.isEmpty ? "" : location.joined(separator: ", ") + ": "
        return "\(file)\(line.map { ":\($0)" } ?? ""): \(prefix)\(message)"
    }
}

/// The rules-file format: `{"version": 1, "rules": [ <rule>, … ]}`. See docs/categories.md.
enum RulesFile {
    /// The only format version so far.
    static let version = 1

    private struct Contents: Decodable {
        var rules: [ClassificationRule]

        private enum Keys: String, CodingKey, CaseIterable { case version, rules }

        init(from decoder: any Decoder) throws {
            try rejectUnknownKeys(in: decoder, allowed: Keys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: Keys.self)
            let version = try container.decode(Int.self, forKey: .version)
            if version != RulesFile.version {
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: container.codingPath + [Keys.version],
                        debugDescription:
                            "unsupported version \(version) (this Stallwatch reads version \(RulesFile.version))"
                    ))
            }
            rules = try container.decode([ClassificationRule].self, forKey: .rules)
        }
    }

    /// Decodes rules from JSON; `source` names the file in errors. A rule may not take one of
    /// the `reserved` names (a user's file: the built-in rules' names).
    static func decode(_ json: Data, source: String, reserved: Set<String> = []) throws(RulesFileError)
        -> [ClassificationRule]
    {
        let rules: [ClassificationRule]
        do {
            rules = try JSONDecoder().decode(Contents.self, from: json).rules
        } catch let error as DecodingError {
            var located = RulesFileError(file: source, decodingError: error)
            located.line = RulesFileLines.line(of: RulesFileLines.steps(of: error), in: [UInt8](json))
            throw located
        } catch {
            throw RulesFileError(file: source, message: "\(error)")
        }
        var seen: [String: Int] = [:]
        for (index, rule) in rules.enumerated() {
            if reserved.contains(rule.name) {
                // A report names each verdict's rule: two rules of one name could not be told apart.
                var error = RulesFileError(
                    file: source, ruleIndex: index, field: "name",
                    message: "'\(rule.name)' is the name of a built-in rule (docs/categories.md); choose another")
                error.line = RulesFileLines.line(of: [.key("rules"), .index(index), .key("name")], in: [UInt8](json))
                throw error
            }
            if let first = seen[rule.name] {
                var error = RulesFileError(
                    file: source, ruleIndex: index, field: "name",
                    message: "duplicate rule name '\(rule.name)' (also rule \(first))")
                error.line = RulesFileLines.line(of: [.key("rules"), .index(index), .key("name")], in: [UInt8](json))
                throw error
            }
            seen[rule.name] = index
        }
        return rules
    }

    /// Decodes rules from a JSON string; `source` names the input in errors.
    static func decode(json: String, source: String) throws(RulesFileError)
        -> [ClassificationRule]
    {
        try decode(Data(json.utf8), source: source)
    }

    /// Reads and decodes a rules file.
    static func load(path: String) throws(RulesFileError) -> [ClassificationRule] {
        let bytes: [UInt8]
        do throws(RegularFile.Failure) {
            bytes = try RegularFile.read(path)
        } catch {
            throw RulesFileError(file: path, message: error.reason)
        }
        return try decode(Data(bytes), source: path, reserved: Set(Classifier.builtinRules.map(\.name)))
    }
}

extension RulesFileError {
    /// Locates a decoding error: `rules[2].match.syscall[0]` becomes rule 2, field
    /// `match.syscall[0]`.
    init(file: String, decodingError: DecodingError) {
        let path: [any CodingKey]
        var message: String
        switch decodingError {
        case .typeMismatch(let type, let context):
            path = context.codingPath
            message = "wrong type (expected \(Self.jsonName(of: type, in: context.codingPath)))"
        case .valueNotFound(let type, let context):
            path = context.codingPath
            message = "missing value (expected \(Self.jsonName(of: type, in: context.codingPath)))"
        case .keyNotFound(let key, let context):
            path = context.codingPath + [key]
            message = "missing required field"
        case .dataCorrupted(let context):
            path = context.codingPath
            message = context.debugDescription
            if let underlying = context.underlyingError {
                message += ": \(underlying)"
            }
        @unknown default:
            path = []
            message = "\(decodingError)"
        }
        var ruleIndex: Int?
        var fieldPath = path[...]
        if path.count >= 2, path[0].stringValue == "rules", let index = path[1].intValue {
            ruleIndex = index
            fieldPath = path.dropFirst(2)
        }
        var field = ""
        for key in fieldPath {
            if let index = key.intValue {
                field += "[\(index)]"
            } else {
                field += field.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        self.init(
            file: file, ruleIndex: ruleIndex, field: field.isEmpty ? nil : field, message: message)
    }

    private static func jsonName(of type: Any.Type, in path: [any CodingKey]) -> String {
        switch type {
        case is [Any].Type:
            path.contains { $0.stringValue == "match" } ? "a string or a list of strings" : "a list"
        case is String.Type: "a string"
        case is Int.Type, is Double.Type, is UInt64.Type: "an integer"
        default: "\(type)"
        }
    }
}
