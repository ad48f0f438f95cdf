/// Compact JSON written by hand, in one pass and one `String`, with numbers in the format we
/// choose: the HTML report's data block and the JSON Lines export (`JSONLines`). With
/// `forHTML`, every `<`, `>` and `&` (and U+2028/U+2029) in a string is a `\u` escape, so the
/// text is safe inside `<script type="application/json">`: no name from a trace can close the
/// block or open a tag.
///
/// Values go in with `string`, `int`, `number`, `bool`, `array` after a `key`; an object's
/// fields one by one with `add` (a comma before each but the first).
///
/// A plain value; use it on one thread at a time.
struct JSONWriter {
    private(set) var text: String
    private let forHTML: Bool

    /// A writer whose text starts with `prefix` (fields of an object already written).
    init(_ prefix: String = "", forHTML: Bool = false) {
        text = prefix
        self.forHTML = forHTML
    }

    mutating func raw(_ fragment: String) { text += fragment }

    mutating func string(_ value: String) { text += quoted(value) }

    mutating func int<Value: BinaryInteger>(_ value: Value) { text += String(value) }

    mutating func number(_ value: Double) { text += Self.number(value) }

    mutating func bool(_ value: Bool) { text += value ? "true" : "false" }

    /// `value` written by `write`, or `null` when it is absent.
    mutating func optional<Value>(_ value: Value?, _ write: (inout Self, Value) -> Void) {
        if let value { write(&self, value) } else { text += "null" }
    }

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
        text += (first ? "" : ",") + quoted(name) + ":"
    }

    /// The text as one object on a line of its own (the fields written with `add`).
    var line: String { "{" + text + "}\n" }

    /// An object's field whose value is already JSON; a comma first unless it is the first.
    mutating func add(_ key: String, raw value: String) {
        if !text.isEmpty { text += "," }
        text += quoted(key) + ":" + value
    }

    mutating func add(_ key: String, _ value: String?) {
        add(key, raw: value.map(quoted) ?? "null")
    }

    mutating func add(_ key: String, _ value: UInt64?) {
        add(key, raw: value.map { String($0) } ?? "null")
    }

    mutating func add(_ key: String, _ value: Bool) {
        add(key, raw: value ? "true" : "false")
    }

    mutating func add(_ key: String, _ values: [String]) {
        add(key, raw: Self.array(values, forHTML: forHTML))
    }

    private func quoted(_ text: String) -> String { Self.quoted(text, forHTML: forHTML) }

    private static func quoted(_ text: String, forHTML: Bool) -> String {
        forHTML ? JSONOutput.htmlSafeString(text) : JSONOutput.string(text)
    }

    /// `values` as a JSON array of strings.
    static func array(_ values: [String], forHTML: Bool = false) -> String {
        "[" + values.map { quoted($0, forHTML: forHTML) }.joined(separator: ",") + "]"
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
