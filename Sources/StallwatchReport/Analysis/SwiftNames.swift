import StallwatchCore

/// Short, readable forms of demangled Swift names, the way Swift source spells a function:
/// `SampleSupport.FeedDatabase.loadFeed(rows: Swift.Int) -> Swift.Array<Feed.Row>` becomes
/// `FeedDatabase.loadFeed(rows:)`.
///
/// The rules: the module prefix goes (the frame's module says it), so do argument types,
/// result types, generic parameters, `static`, private discriminators (`(hash in _7CEF…)`
/// becomes `hash`), specialization wrappers, partial-apply forwarders, `merged` and async
/// continuations (each stands for the function it wraps; `Frame.standsFor` reads them); a
/// closure keeps its number and what it is in (`closure #1 in PhotoLibrary.hash(_:chunk:seed:)`). Names that are not Swift (C, C++,
/// addresses) are returned unchanged, and so is anything the simplifier cannot parse.
///
/// Pure; use it on any thread.
package enum SwiftNames {
    /// The simplified form of the demangled name `name`.
    package static func simplify(_ name: String) -> String {
        // C++ (`std::vector<int>::push_back`) and C (`sqlite3_step`) stay as they are.
        // Bytes, not characters: `String.contains` compares grapheme by grapheme.
        if name.utf8Offset(of: "::") != nil || !name.utf8.contains(UInt8(ascii: ".")) { return name }
        var parser = Parser(Array(name.unicodeScalars))
        guard let simplified = parser.entity(), parser.atEnd else { return name }
        return simplified
    }

    private struct Parser {
        let text: [Unicode.Scalar]
        var position = 0

        init(_ text: [Unicode.Scalar]) { self.text = text }

        var atEnd: Bool { position >= text.count }

        /// Skips the wrappers that stand for the function they wrap: specializations,
        /// partial-apply forwarders, `merged` and async continuations (`Frame.standsFor`, the
        /// one reader of them).
        mutating func skipWrappers() {
            guard !atEnd, text[position].isASCII, Frame.wrapperInitials.contains(UInt8(text[position].value)) else {
                return
            }
            let rest = String(String.UnicodeScalarView(text[position...]))
            position += rest.unicodeScalars.count - Frame.standsFor(rest).unicodeScalars.count
        }

        /// One demangled entity: wrappers, closures, then a qualified function or accessor.
        mutating func entity() -> String? {
            skipWrappers()
            for dropped in ["static ", "protocol witness for ", "dispatch thunk of ", "@objc "] where consume(dropped) {
                return witnessTail(entity())
            }
            for kept in ["reabstraction thunk helper for "] where consume(kept) {
                return entity().map { kept + $0 }
            }
            for closure in ["implicit closure #", "closure #"] where consume(closure) {
                let number = takeWhile { $0.properties.numericType != nil }
                guard !number.isEmpty else { return nil }
                // Skip the closure's own signature up to ` in ` at depth 0.
                guard skip(untilTopLevel: " in ") else { return nil }
                return entity().map { "\(closure)\(number) in \($0)" }
            }
            return qualifiedName()
        }

        /// `protocol witness for X in conformance Y`: keep X only.
        mutating func witnessTail(_ inner: String?) -> String? {
            if consume(" in conformance ") { position = text.count }
            return inner
        }

        /// `Module.Type.member(label: Type, …) throws -> Result`, `Module.Type.member.getter : T`.
        mutating func qualifiedName() -> String? {
            var components: [String] = []
            while true {
                guard let component = component() else { return nil }
                components.append(component)
                if consume(".") { continue }
                break
            }
            var arguments: String?
            if peek("(") {
                guard let labels = argumentLabels() else { return nil }
                arguments = labels
                // The rest (` throws -> Result`, ` async`) says nothing the reader needs.
                position = text.count
            } else if consume(" : ") {
                position = text.count
            } else if components.count > 1 {
                // A dotted name without arguments or a type is not a demangled Swift function
                // (`sqlite3VdbeExec.part.0`, `__libc_start_main@@GLIBC_2.34`): leave it.
                return nil
            }
            if !atEnd {
                // `… in conformance` and other tails seen by `witnessTail`; anything else is
                // something this parser does not know.
                guard peek(" in conformance ") else { return nil }
            }
            if components.count > 1 { components.removeFirst() }
            return components.joined(separator: ".") + (arguments ?? "")
        }

        /// One path component: an identifier with optional generic arguments, `(name in _…)`,
        /// or `(extension in Module):Type`.
        mutating func component() -> String? {
            if consume("(extension in ") {
                guard skip(untilTopLevel: "):") else { return nil }
                return component()
            }
            if peek("(") {
                // `(hash in _7CEFA7E567FCEEB50EE460ADD21164F8)`: a private name.
                let start = position
                position += 1
                let name = takeWhile { $0 != " " && $0 != ")" }
                if consume(" in "), skip(untilTopLevel: ")"), !name.isEmpty { return name }
                position = start
                return nil
            }
            let name = takeWhile { $0 != "." && $0 != "(" && $0 != "<" && $0 != " " && $0 != ")" && $0 != "," }
            guard !name.isEmpty, name.unicodeScalars.allSatisfy({ Self.isIdentifier($0) || $0 == "`" }) else {
                return nil
            }
            if peek("<") {
                guard skipBalanced() else { return nil }
            }
            return name
        }

        /// `(rows: Swift.Int, _: Swift.String)` → `(rows:_:)`; an argument without a label
        /// (`(Swift.Int)`, a function type) is `_:`.
        mutating func argumentLabels() -> String? {
            let start = position
            guard skipBalanced() else { return nil }
            let inner = Array(text[(start + 1)..<(position - 1)])
            if inner.isEmpty { return "()" }
            var labels = ""
            for argument in Self.splitTopLevel(inner) {
                var label = "_"
                if let colon = Self.topLevelLabelColon(argument) {
                    let candidate = String(String.UnicodeScalarView(argument[..<colon]))
                        .trimmingSpaces()
                    if !candidate.isEmpty, candidate.unicodeScalars.allSatisfy(Self.isIdentifier) { label = candidate }
                }
                labels += label + ":"
            }
            return "(" + labels + ")"
        }

        static func isIdentifier(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "_" || scalar.properties.isAlphabetic || scalar.properties.numericType != nil
        }

        /// The `:` of `label: Type` (a colon followed by a space, at depth 0), if any.
        static func topLevelLabelColon(_ argument: ArraySlice<Unicode.Scalar>) -> Int? {
            var depth = 0
            var index = argument.startIndex
            while index < argument.endIndex {
                let scalar = argument[index]
                switch scalar {
                case "(", "[", "<": depth += 1
                case ")", "]": depth -= 1
                case ">": if index == argument.startIndex || argument[index - 1] != "-" { depth -= 1 }
                case ":":
                    if depth == 0, index + 1 < argument.endIndex, argument[index + 1] == " " { return index }
                default: break
                }
                index += 1
            }
            return nil
        }

        static func splitTopLevel(_ scalars: [Unicode.Scalar]) -> [ArraySlice<Unicode.Scalar>] {
            var parts: [ArraySlice<Unicode.Scalar>] = []
            var depth = 0
            var start = 0
            for index in scalars.indices {
                switch scalars[index] {
                case "(", "[", "<": depth += 1
                case ")", "]": depth -= 1
                case ">": if index == 0 || scalars[index - 1] != "-" { depth -= 1 }
                case ",":
                    if depth == 0 {
                        parts.append(scalars[start..<index])
                        start = index + 1
                    }
                default: break
                }
            }
            parts.append(scalars[start..<scalars.count])
            return parts
        }

        /// Skips one balanced `(…)`, `[…]` or `<…>` group starting at the current position
        /// (an arrow's `>` does not close anything).
        mutating func skipBalanced() -> Bool {
            guard !atEnd, "([<".unicodeScalars.contains(text[position]) else { return false }
            var depth = 0
            while !atEnd {
                let scalar = text[position]
                switch scalar {
                case "(", "[", "<": depth += 1
                case ")", "]": depth -= 1
                case ">": if position == 0 || text[position - 1] != "-" { depth -= 1 }
                default: break
                }
                position += 1
                if depth == 0 { return true }
                if depth < 0 { return false }
            }
            return false
        }

        /// Moves past the first occurrence of `marker` outside any brackets.
        mutating func skip(untilTopLevel marker: String) -> Bool {
            var depth = 0
            while !atEnd {
                if depth == 0, peek(marker) {
                    position += marker.unicodeScalars.count
                    return true
                }
                switch text[position] {
                case "(", "[", "<": depth += 1
                case ")", "]": depth -= 1
                case ">": if position == 0 || text[position - 1] != "-" { depth -= 1 }
                default: break
                }
                position += 1
            }
            return false
        }

        func peek(_ literal: String) -> Bool {
            var index = position
            for scalar in literal.unicodeScalars {
                guard index < text.count, text[index] == scalar else { return false }
                index += 1
            }
            return true
        }

        mutating func consume(_ literal: String) -> Bool {
            guard peek(literal) else { return false }
            position += literal.unicodeScalars.count
            return true
        }

        mutating func takeWhile(_ predicate: (Unicode.Scalar) -> Bool) -> String {
            var result = String.UnicodeScalarView()
            while !atEnd, predicate(text[position]) {
                result.append(text[position])
                position += 1
            }
            return String(result)
        }
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var scalars = Substring(self).unicodeScalars[...]
        while scalars.first == " " { scalars.removeFirst() }
        while scalars.last == " " { scalars.removeLast() }
        return String(String.UnicodeScalarView(scalars))
    }
}
