/// Compact JSON for the HTML report's data block, written by hand so that ten thousand stalls
/// encode in one pass, and safe inside `<script type="application/json">`: every `<`, `>` and
/// `&` (and U+2028/U+2029) in a string is a `\u` escape, so no name from a trace can close the
/// block or open a tag, and the bytes between the tags hold none of those characters at all.
///
/// A plain value; use it on one thread at a time.
struct HTMLJSONWriter {
    private(set) var text = ""

    mutating func raw(_ fragment: String) { text += fragment }

    mutating func string(_ value: String) { text += JSONOutput.htmlSafeString(value) }

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
        text += (first ? "" : ",") + JSONOutput.htmlSafeString(name) + ":"
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
