/// ANSI styling that is a no-op when colour is off (not a terminal, or `NO_COLOR` set).
///
/// A plain value; use it on any thread.
struct Style: Sendable {
    var enabled: Bool

    func bold(_ text: String) -> String { wrap(text, "1") }
    func red(_ text: String) -> String { wrap(text, "31") }
    func green(_ text: String) -> String { wrap(text, "32") }
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

/// A camelCase name's words, lowercase, joined by `separator`: `lockWait` → `lock_wait` with
/// `"_"`, `maxHitchRatio` → `max-hitch-ratio` with `"-"`.
package func splittingCamelCase(_ name: String, separator: String) -> String {
    var result = ""
    for character in name {
        if character.isUppercase {
            result += separator + character.lowercased()
        } else {
            result.append(character)
        }
    }
    return result
}

/// A number the way a person types it: `8`, `12.5`.
func plainNumber(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
}

/// How text output is laid out: colour, the line width and whether names are shown in full.
///
/// A plain value; use it on any thread.
package struct TextOptions: Sendable, Hashable {
    /// Whether to use ANSI bold and dim.
    package var colour: Bool
    /// The widest a line may be, in columns; `nil` for no limit (`--wide`).
    package var width: Int?
    /// Whether frames show their full demangled symbols (`--verbose`) rather than short names.
    package var verbose: Bool
    /// Whether a report over several traces lists each trace (`--list-traces`) rather than
    /// only summarising them.
    package var listTraces: Bool

    /// Creates options; by default no colour, 100 columns, short names, traces summarised.
    package init(colour: Bool = false, width: Int? = 100, verbose: Bool = false, listTraces: Bool = false) {
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

/// `lines` as terminal text, one per line, each made safe by `terminalSafe(_:style:)`: a name
/// from a trace cannot start a line of its own, move the cursor, retitle the window or turn
/// text around. What every text renderer returns.
func terminalText(_ lines: [String], style: Style) -> String {
    var text = ""
    for line in lines {
        text += terminalSafe(line, style: style)
        text += "\n"
    }
    return text
}

/// `text` with every character a terminal would act on shown instead: C0 and C1 controls
/// (line breaks and escape included) and DEL as `\n`, `\r`, `\t` or `\u{1B}`, and the Unicode
/// bidirectional controls (U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069) and line
/// separators (U+2028–U+2029) as `\u{202E}`. With `style` enabled, the exact sequences `Style`
/// writes pass: a trace that holds one of them can only bold, dim or colour its own text.
func terminalSafe(_ text: String, style: Style = Style(enabled: false)) -> String {
    let scalars = text.unicodeScalars
    guard scalars.contains(where: needsEscape) else { return text }
    var result = String.UnicodeScalarView()
    var index = scalars.startIndex
    while index < scalars.endIndex {
        let scalar = scalars[index]
        if scalar == "\u{1B}", style.enabled, let end = Style.sequenceEnd(in: scalars, at: index) {
            result.append(contentsOf: scalars[index..<end])
            index = end
            continue
        }
        index = scalars.index(after: index)
        guard needsEscape(scalar) else {
            result.append(scalar)
            continue
        }
        let shown: String
        switch scalar {
        case "\n": shown = "\\n"
        case "\r": shown = "\\r"
        case "\t": shown = "\\t"
        default: shown = "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
        }
        result.append(contentsOf: shown.unicodeScalars)
    }
    return String(result)
}

private func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00..<0x20, 0x7F..<0xA0, 0x061C, 0x200E...0x200F, 0x2028...0x202E, 0x2066...0x2069: true
    default: false
    }
}

extension Style {
    /// The codes `wrap` writes, between `ESC [` and `m`.
    fileprivate static let codes: [String] = ["0", "1", "2", "31", "32"]

    /// The end of the `Style` sequence that starts at `index` (an escape), if it is one.
    fileprivate static func sequenceEnd(
        in scalars: String.UnicodeScalarView, at index: String.UnicodeScalarView.Index
    ) -> String.UnicodeScalarView.Index? {
        let rest = scalars[index...].dropFirst()
        guard rest.first == "[" else { return nil }
        let body = rest.dropFirst().prefix(3)
        guard let end = body.firstIndex(of: "m") else { return nil }
        return codes.contains(String(String.UnicodeScalarView(body[..<end]))) ? scalars.index(after: end) : nil
    }
}

/// Text made safe for a terminal, for what the command line prints beside the renderers (its
/// messages, which name files).
///
/// Pure; use it on any thread.
package enum TerminalText {
    /// `text` with its line breaks kept and every other character a terminal acts on shown
    /// escaped (`terminalSafe(_:style:)`): for a message that names a file.
    package static func message(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { terminalSafe(String($0)) }
            .joined(separator: "\n")
    }
}
