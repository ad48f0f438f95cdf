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

/// How text output is laid out: colour, the line width and whether names are shown in full.
///
/// A plain value; use it on any thread.
public struct TextOptions: Sendable, Hashable {
    /// Whether to use ANSI bold and dim.
    public var colour: Bool
    /// The widest a line may be, in columns; `nil` for no limit (`--wide`).
    public var width: Int?
    /// Whether frames show their full demangled symbols (`--verbose`) rather than short names.
    public var verbose: Bool
    /// Whether a report over several traces lists each trace (`--list-traces`) rather than
    /// only summarising them.
    public var listTraces: Bool

    /// Creates options; by default no colour, 100 columns, short names, traces summarised.
    public init(colour: Bool = false, width: Int? = 100, verbose: Bool = false, listTraces: Bool = false) {
        self.colour = colour
        self.width = width
        self.verbose = verbose
        self.listTraces = listTraces
    }
}

/// The narrowest width text is laid out for (the classic terminal): a narrower one gets lines
/// of this width, which it wraps.
let minimumWidth = 80

/// `text` shortened to `width` columns by replacing its middle with `…` (the start and end of
/// a name tell the most: its type and its arguments). `nil` width leaves it alone.
func elideMiddle(_ text: String, _ width: Int?) -> String {
    guard let width, text.count > width else { return text }
    let room = max(width, 3) - 1
    let head = (room + 1) / 2
    return String(text.prefix(head)) + "…" + String(text.suffix(room - head))
}

/// `items` joined by `separator` in lines of at most `width` columns: the first line starts
/// with `first`, the others with `continuation`; an item too long for a line of its own is
/// elided in the middle. `nil` width makes one line.
func wrapItems(_ items: [String], separator: String, first: String, continuation: String, width: Int?) -> [String] {
    guard let limit = width else { return [first + items.joined(separator: separator)] }
    let width = max(limit, minimumWidth)
    var lines: [String] = []
    var line = first
    var lineHasItem = false
    for (index, item) in items.enumerated() {
        let tail = index + 1 < items.count ? separator.trimmingTrailingSpaces() : ""
        let candidate = line + (lineHasItem ? separator : "") + item
        if candidate.count + tail.count <= width || !lineHasItem && line.count + item.count + tail.count <= width {
            line = candidate
            lineHasItem = true
            continue
        }
        if lineHasItem {
            lines.append(line + separator.trimmingTrailingSpaces())
            line = continuation
        }
        let fitted = elideMiddle(item, width - line.count - tail.count)
        line += fitted
        lineHasItem = true
    }
    lines.append(line)
    return lines
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
