#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The JSON of `stallwatch report --json` and `diff --json`: pretty-printed, keys sorted,
/// slashes unescaped, so the same input always gives the same bytes.
///
/// Pure; use it on any thread.
package enum JSONOutput {
    /// `value` (a `StallReport`, a `SignatureDiff`) as JSON text, ending in a newline.
    package static func encode<Value: Encodable>(_ value: Value) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self) + "\n"
    }

    /// A JSON string literal for `text` (quotes included), for hand-written JSON.
    static func string(_ text: String) -> String { quoted(text, forHTML: false) }

    /// A JSON string literal for `text` that is also safe inside `<script type="application/json">`
    /// (the HTML report's data block): every `<`, `>` and `&` (and U+2028/U+2029) is a `\u`
    /// escape, so no name from a trace can close the block or open a tag.
    static func htmlSafeString(_ text: String) -> String { quoted(text, forHTML: true) }

    /// The one escaper: quotes, backslashes and control characters escaped; with `forHTML`, the
    /// HTML-significant characters too.
    private static func quoted(_ text: String, forHTML: Bool) -> String {
        // Most names need no escape: then the bytes are copied as they are, not scalar by scalar.
        var result = "\""
        result.reserveCapacity(text.utf8.count + 2)
        if !text.utf8.contains(where: { needsEscape($0, forHTML: forHTML) }) {
            result += text
            return result + "\""
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || (forHTML && isHTMLSignificant(scalar)):
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    /// Whether a string with the UTF-8 byte `byte` may need an escape: a control character, a
    /// quote or backslash, and with `forHTML`, `<`, `>`, `&` or the lead byte of U+2028/U+2029.
    private static func needsEscape(_ byte: UInt8, forHTML: Bool) -> Bool {
        switch byte {
        case 0..<0x20, UInt8(ascii: "\""), UInt8(ascii: "\\"): true
        case UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "&"), 0xE2: forHTML
        default: false
        }
    }

    /// What `htmlSafeString` escapes besides what every JSON string must.
    private static func isHTMLSignificant(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "<", ">", "&", "\u{2028}", "\u{2029}": true
        default: false
        }
    }
}

/// An optional that JSON writes as `null` when absent, where a synthesized `Codable` would
/// leave its key out, so a schema's keys do not come and go with the data.
///
/// Reads back `null` or a value; a plain value, use it on any thread.
@propertyWrapper
package struct NullWhenAbsent<Value: Encodable>: Encodable {
    package var wrappedValue: Value?

    package init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    /// Writes the value, or `null`.
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension NullWhenAbsent: Decodable where Value: Decodable {
    /// Reads `null` as absent.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Value.self)
    }
}

extension NullWhenAbsent: Sendable where Value: Sendable {}
extension NullWhenAbsent: Equatable where Value: Equatable {}
extension NullWhenAbsent: Hashable where Value: Hashable {}
