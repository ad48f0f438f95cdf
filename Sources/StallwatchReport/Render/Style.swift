/// ANSI styling that is a no-op when colour is off (not a terminal, or `NO_COLOR` set).
///
/// A plain value; use it on any thread.
struct Style: Sendable {
    var enabled: Bool

    func bold(_ text: String) -> String { wrap(text, "1") }
    func red(_ text: String) -> String { wrap(text, "31") }
    func green(_ text: String) -> String { wrap(text, "32") }
    func yellow(_ text: String) -> String { wrap(text, "33") }
    func dim(_ text: String) -> String { wrap(text, "2") }

    private func wrap(_ text: String, _ code: String) -> String {
        enabled ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
}

/// `value` with `places` decimals (`format(3.14159, 2)` is `"3.14"`), without Foundation.
func format(_ value: Double, _ places: Int) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
    let negative = value < 0
    var scale: UInt64 = 1
    for _ in 0..<places { scale *= 10 }
    let scaled = UInt64((abs(value) * Double(scale)).rounded())
    var text = String(scaled / scale)
    if places > 0 {
        let fraction = String(scaled % scale)
        text += "." + String(repeating: "0", count: places - fraction.count) + fraction
    }
    return (negative && scaled != 0 ? "-" : "") + text
}

/// Pads `text` on the right to `width` characters.
func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

/// Pads `text` on the left to `width` characters.
func padLeft(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
}

/// `1 stall`, `2 stalls`.
func plural(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}

/// A number the way a person types it: `8`, `12.5`.
func plainNumber(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
}
