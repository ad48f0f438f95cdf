import StallwatchCore

/// Where in a rules file's text a decoding error lies, as a line number, so that one error
/// line (`rules.json:7: rule 1, field 'category': …`) takes the reader to the place.
///
/// The decoder names a coding path (`rules[1].category`); this walks the JSON text along that
/// path and answers the line of the deepest value it reaches (the rule, when the field is
/// missing). For text that is not JSON, it answers the line of the first byte that cannot be
/// part of a JSON document.
///
/// A plain value made per error; any thread.
struct RulesFileLines {
    private let bytes: [UInt8]
    private var position = 0

    /// One step of a coding path: an object's key or an array's index.
    enum Step: Equatable {
        case key(String)
        case index(Int)
    }

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The line (1-based) of the value at `path` in `json`, or of the deepest value on the way
    /// that exists; for text that is not JSON, the line of the first byte in error.
    static func line(of path: [Step], in json: [UInt8]) -> Int {
        var syntax = RulesFileLines(json)
        if !syntax.skipDocument() { return syntax.lineAtPosition }
        var walker = RulesFileLines(json)
        walker.skipWhitespace()
        return walker.find(path[...])
    }

    /// The steps of a decoding error's coding path (a missing key included).
    static func steps(of error: DecodingError) -> [Step] {
        let keys: [any CodingKey]
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            keys = context.codingPath
        case .keyNotFound(let key, let context):
            keys = context.codingPath + [key]
        @unknown default:
            keys = []
        }
        return keys.map { $0.intValue.map(Step.index) ?? .key($0.stringValue) }
    }

    private var lineAtPosition: Int {
        1 + bytes[..<min(position, bytes.count)].reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
    }

    /// At the start of a value: the line of the value `path` leads to from it.
    private mutating func find(_ path: ArraySlice<Step>) -> Int {
        let here = lineAtPosition
        guard let step = path.first, position < bytes.count else { return here }
        switch (bytes[position], step) {
        case (UInt8(ascii: "{"), .key(let wanted)):
            position += 1
            while skipWhitespace(), position < bytes.count, bytes[position] == UInt8(ascii: "\"") {
                guard let key = readString(), skipWhitespace(), consume(":") else { return here }
                skipWhitespace()
                if key == wanted { return find(path.dropFirst()) }
                guard skipValue(), skipWhitespace(), consume(",") else { return here }
            }
        case (UInt8(ascii: "["), .index(let wanted)):
            position += 1
            for index in 0... {
                skipWhitespace()
                if index == wanted { return find(path.dropFirst()) }
                guard skipValue(), skipWhitespace(), consume(",") else { return here }
            }
        default:
            break
        }
        return here
    }

    /// One value and nothing after it but whitespace.
    private mutating func skipDocument() -> Bool {
        skipWhitespace()
        guard skipValue() else { return false }
        skipWhitespace()
        return position == bytes.count
    }

    /// Skips one value; false (at the byte in error) if there is none.
    private mutating func skipValue() -> Bool {
        guard position < bytes.count else { return false }
        switch bytes[position] {
        case UInt8(ascii: "\""):
            return readString() != nil
        case UInt8(ascii: "{"):
            return skipMembers(closing: "}", member: true)
        case UInt8(ascii: "["):
            return skipMembers(closing: "]", member: false)
        default:
            let start = position
            while position < bytes.count, Self.scalarBytes.contains(bytes[position]) { position += 1 }
            return position > start
        }
    }

    /// The bytes of numbers, `true`, `false` and `null`.
    private static let scalarBytes = Set("0123456789+-.eEtrufalsn".utf8)

    /// After `{` or `[`: members separated by commas up to `closing`.
    private mutating func skipMembers(closing: Unicode.Scalar, member: Bool) -> Bool {
        position += 1
        skipWhitespace()
        if consume(closing) { return true }
        while true {
            if member {
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), readString() != nil,
                    skipWhitespace(), consume(":")
                else { return false }
                skipWhitespace()
            }
            guard skipValue() else { return false }
            skipWhitespace()
            if consume(closing) { return true }
            guard consume(",") else { return false }
            skipWhitespace()
        }
    }

    /// At a `"`: the string's raw bytes up to the closing quote (escapes kept as written).
    private mutating func readString() -> String? {
        var index = position + 1
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        guard index < bytes.count else {
            position = bytes.count
            return nil
        }
        let text = String(decoding: bytes[(position + 1)..<index], as: UTF8.self)
        position = index + 1
        return text
    }

    private mutating func consume(_ byte: Unicode.Scalar) -> Bool {
        guard position < bytes.count, bytes[position] == UInt8(ascii: byte) else { return false }
        position += 1
        return true
    }

    /// Skips spaces, tabs and line breaks; always true (so it can sit in a condition list).
    @discardableResult
    private mutating func skipWhitespace() -> Bool {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        return true
    }
}
