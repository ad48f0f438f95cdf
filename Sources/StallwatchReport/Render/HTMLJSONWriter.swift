/// Compact JSON for the HTML report's data block, written by hand so that ten thousand stalls
/// encode in one pass, and safe inside `<script type="application/json">`: every `<`, `>` and
/// `&` (and U+2028/U+2029) in a string is a `\u` escape, so no name from a trace can close the
/// block or open a tag, and the bytes between the tags hold none of those characters at all.
///
/// A plain value; use it on one thread at a time.
struct HTMLJSONWriter {
    private(set) var text = ""

    mutating func raw(_ fragment: String) { text += fragment }

    mutating func string(_ value: String) { text += Self.quoted(value) }

    mutating func int<Value: BinaryInteger>(_ value: Value) { text += String(value) }

    mutating func number(_ value: Double) { text += Self.number(value) }

    mutating func bool(_ value: Bool) { text += value ? "true" : "false" }

    /// `[a,b,c]` with `element` writing each.
    mutating func array<Element>(_ elements: some Sequence<Element>, _ element: (inout Self, Element) -> Void) {
        text += "["
        var first = true
        for item in elements {
            if !first { text += "," }
            first = false
            element(&self, item)
        }
        text += "]"
    }

    /// `"key":` (after a comma unless `first`).
    mutating func key(_ name: String, first: Bool = false) {
        text += (first ? "" : ",") + Self.quoted(name) + ":"
    }

    /// A JSON string literal for `value`, quotes included, with the HTML-significant
    /// characters escaped.
    static func quoted(_ value: String) -> String {
        var result = "\""
        result.reserveCapacity(value.utf8.count + 2)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "<": result += "\\u003c"
            case ">": result += "\\u003e"
            case "&": result += "\\u0026"
            case "\u{2028}": result += "\\u2028"
            case "\u{2029}": result += "\\u2029"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    /// A finite number with at most three decimals and no trailing zeros (`12.5`, `3`);
    /// `0` for NaN or infinity, which JSON cannot hold.
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        var text = format(value, 3)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text == "-0" ? "0" : text
    }
}
