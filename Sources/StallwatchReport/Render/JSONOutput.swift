import Foundation

/// The JSON of `stallwatch report --json` and `diff --json`: pretty-printed, keys sorted,
/// slashes unescaped, so the same input always gives the same bytes.
///
/// Pure; use it on any thread.
public enum JSONOutput {
    /// `value` (a `StallReport`, a `SignatureDiff`) as JSON text, ending in a newline.
    public static func encode<Value: Encodable>(_ value: Value) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self) + "\n"
    }

    /// A JSON string literal for `text` (quotes included), for hand-written JSON.
    static func string(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
