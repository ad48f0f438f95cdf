import StallwatchAnalysis
import StallwatchCore

/// How frames of one trace are named everywhere a person or a viewer reads them: the one
/// owner of the rules, so `report`, `show`, signatures and every export agree.
///
/// - A symbolicated Swift frame is its simplified name (`FeedDatabase.loadFeed(rows:)`,
///   `SwiftNames.simplify`); `fullName` keeps the demangled symbol (`--verbose`, JSON).
/// - A frame with no symbol is `module+0xOFFSET` (`libsqlite3.so.0+0x4f1a3`): the offset from
///   the image's load address, which stays the same across runs (ASLR moves the base, not the
///   offset), so flame graphs of two runs merge. Without a module, the address (`0x7f…`).
/// - A source path is relative to the build root (the directory holding the app's `.build`)
///   when it lies under it, else absolute as the debug information gave it; the compiler's
///   `<compiler-generated>` pseudo-file is no source at all.
///
/// A plain value; use it on any thread.
package struct FrameNamer: Sendable, Hashable {
    /// Each module's load address, by path.
    var loadAddresses: [String: UInt64]
    /// Where source paths are made relative to (ends with `/`), `nil` when not known.
    package var buildRoot: String?

    /// A namer for a trace with the module map `modules`; the build root is the directory
    /// that holds a module's `.build/` directory (a SwiftPM build), unless given.
    package init(modules: [TraceRecord.Module], buildRoot: String? = nil) {
        var addresses: [String: UInt64] = [:]
        for module in modules where addresses[module.path] == nil { addresses[module.path] = module.loadAddress }
        loadAddresses = addresses
        self.buildRoot = buildRoot ?? Self.buildRoot(of: modules.map(\.path))
    }

    /// The short name: simplified Swift name, `module+0xOFFSET`, or the address; marked
    /// async (`asyncMark`) for async code.
    package func name(_ frame: Frame) -> String {
        guard let symbol = frame.symbol else {
            return frame.isAsync ? unsymbolicatedName(frame) + Self.asyncMark : unsymbolicatedName(frame)
        }
        return Self.name(ofSymbol: symbol)
    }

    /// The short name of a frame whose symbol is `symbol`, in any trace, cut (`cut(_:)`). An
    /// async function (its continuations `(1) suspend resume partial function for X`, `(2)
    /// await resume partial function for X`, or its entry) is named by the function, `X`, with
    /// `asyncMark` after it: the mark depends on the symbol alone, so every cache of names by
    /// symbol holds it, and an awaiting caller from the context chain (always a continuation)
    /// is marked like the innermost async frame on the stack.
    static func name(ofSymbol symbol: String) -> String {
        // A name this long is no Swift name the simplifier could shorten to a readable one.
        guard symbol.utf8.count <= 16 * nameLimit else { return cut(symbol) }
        guard Frame.isAsyncFunction(symbol) else { return cut(SwiftNames.simplify(symbol)) }
        // A continuation of what the simplifier cannot parse (a top-level closure `in Module`)
        // is still named by the function it continues.
        var name = SwiftNames.simplify(symbol)
        if name == symbol { name = SwiftNames.simplify(String(Frame.standsFor(symbol))) }
        return cut(name) + asyncMark
    }

    /// What follows the name of a frame of async code in every output (`report`, `show`, the
    /// page, signatures and every export): `Service.fetch() [async]`. docs/async.md.
    package static let asyncMark = " [async]"

    /// The full demangled symbol, cut (`cut(_:)`), or what `name(_:)` gives for a frame without
    /// one.
    package func fullName(_ frame: Frame) -> String {
        frame.symbol.map(Self.cut) ?? unsymbolicatedName(frame)
    }

    /// How many bytes of UTF-8 a frame's name keeps in any output.
    package static let nameLimit = 4_096

    /// `name` when it has at most `nameLimit` bytes of UTF-8; else its whole characters that
    /// fit in them and a visible mark of what was cut, `…[cut 1044480 bytes]`. A symbol may be
    /// megabytes long (a type nested in generics), and every output names each sample's frames:
    /// the one place names are bounded, so that `report`, `show`, the page and every export
    /// show the same cut.
    package static func cut(_ name: String) -> String {
        let count = name.utf8.count
        guard count > nameLimit else { return name }
        let utf8 = name.utf8
        var end = name.startIndex
        while end < name.endIndex {
            let next = name.index(after: end)
            if utf8.distance(from: utf8.startIndex, to: next) > nameLimit { break }
            end = next
        }
        let kept = utf8.distance(from: utf8.startIndex, to: end)
        return String(name[..<end]) + "…[cut \(count - kept) bytes]"
    }

    /// `file:line` in the one path style, `nil` when unknown or compiler-generated.
    package func source(_ frame: Frame) -> String? {
        guard let file = frame.file.flatMap(path) else { return nil }
        return frame.line.map { "\(file):\($0)" } ?? file
    }

    /// `file` relative to the build root when under it, else as given; `nil` for the
    /// compiler's pseudo-file.
    package func path(_ file: String) -> String? {
        if file.isEmpty || file.hasSuffix("<compiler-generated>") { return nil }
        var file = file
        // `//foo` is the same file as `/foo`; DWARF sometimes joins a `/` directory and a
        // rooted name.
        while file.hasPrefix("//") { file.removeFirst() }
        if let buildRoot, file.hasPrefix(buildRoot), file.count > buildRoot.count {
            return String(file.dropFirst(buildRoot.count))
        }
        return file
    }

    private func unsymbolicatedName(_ frame: Frame) -> String {
        let hex = "0x" + String(frame.address, radix: 16)
        guard let module = frame.module else { return hex }
        let base = Frame.basename(module)
        guard let load = loadAddresses[module], frame.address >= load else { return "\(base)+\(hex)" }
        return "\(base)+0x" + String(frame.address - load, radix: 16)
    }

    /// The directory holding `.build/` of the first module built by SwiftPM, with a slash.
    static func buildRoot(of paths: [String]) -> String? {
        for path in paths {
            guard let offset = path.utf8Offset(of: "/.build/") else { continue }
            return String(decoding: path.utf8.prefix(offset), as: UTF8.self) + "/"
        }
        return nil
    }
}

/// Whether a frame is glue the compiler generated (thunks, outlined copies, a forwarder to a
/// thunk): it tells nothing about the app, so signatures and representative stacks skip it. A
/// specialization, a partial-apply forwarder to a function or a merged function stands for that
/// function (`Frame.standsFor`) and is not glue: in a release build it is often the only frame
/// of the app's code.
func isCompilerGenerated(_ frame: Frame) -> Bool {
    if frame.file?.utf8HasSuffix("<compiler-generated>") == true, frame.symbol.map(isGlue) ?? true { return true }
    return frame.symbol.map(isGlue) ?? false
}

/// Whether the demangled `symbol` is a thunk or outlined code, whatever wraps it.
private func isGlue(_ symbol: String) -> Bool {
    // Every glue prefix starts with r, t, o or _; most symbols start with a module's name.
    guard let first = symbol.utf8.first else { return false }
    let function = compilerGeneratedInitials.contains(first) ? Substring(symbol) : Frame.standsFor(symbol)
    guard let initial = function.utf8.first, compilerGeneratedInitials.contains(initial) else { return false }
    return compilerGeneratedPrefixes.contains { function.utf8.starts(with: $0.utf8) }
}

/// Thunks, outlined copies, and the runtime helpers the compiler emits into every module
/// (`__swift_instantiateConcreteTypeFromMangledName`, `__swift_project_boxed_opaque_existential_1`…).
private let compilerGeneratedPrefixes = ["reabstraction thunk", "thunk for ", "outlined ", "__swift_"]
private let compilerGeneratedInitials = Set(compilerGeneratedPrefixes.compactMap(\.utf8.first))

/// How a frame is named without its trace's module map (no load addresses, no build root):
/// prefer `AnalyzedStall.frameName(_:)`, which has both.
func frameName(_ frame: Frame) -> String {
    FrameNamer(modules: []).name(frame)
}

/// How one trace's frames are named, with its `FrameNamer` made only when asked for: most of a
/// fleet report names frames by symbol, which needs no namer, and making one per trace (its
/// module map, its build root) was a hundredth of the report.
///
/// A plain value; use it on any thread.
struct TraceNames: Sendable {
    private let modules: [TraceRecord.Module]
    private let given: FrameNamer?

    /// The names of a trace with the module map `modules`.
    init(modules: [TraceRecord.Module]) {
        self.modules = modules
        given = nil
    }

    /// The names `namer` gives.
    init(_ namer: FrameNamer) {
        modules = []
        given = namer
    }

    /// The trace's namer.
    var namer: FrameNamer { given ?? FrameNamer(modules: modules) }

    /// `FrameNamer.name(_:)` of `frame`, without a namer when the frame has a symbol.
    func name(_ frame: Frame) -> String {
        if let symbol = frame.symbol { return FrameNamer.name(ofSymbol: symbol) }
        return namer.name(frame)
    }
}

/// The frame names of one sample table's stacks (`SampleTable.stacks`), made the first time an
/// output asks for a stack and kept: every export and the page name a sample's frames through
/// it, so each distinct frame is named (simplified, cut) once per trace, not once per sample.
///
/// Any thread: a lock guards the names made so far.
package final class StackNames: Sendable {
    private let stacks: [[Frame]]
    private let namer: FrameNamer
    private let named: Locked<(stacks: [[String]?], symbols: [String: String])>

    /// The names of `table`'s stacks, as `namer` names frames.
    init(_ table: SampleTable, namer: FrameNamer) {
        stacks = table.stacks
        self.namer = namer
        named = Locked(([[String]?](repeating: nil, count: table.stacks.count), [:]))
    }

    /// `FrameNamer.name(_:)` of each frame of stack `number`, innermost first.
    package func names(ofStack number: Int32) -> [String] {
        let index = Int(number)
        if let known = named.withLock({ $0.stacks[index] }) { return known }
        let frames = stacks[index]
        // A symbol seen in another stack is named once (hashing it costs less than simplifying).
        let symbols = named.withLock { named in frames.map { $0.symbol.flatMap { named.symbols[$0] } } }
        var made: [String] = []
        made.reserveCapacity(frames.count)
        var new: [(String, String)] = []
        for (frame, known) in zip(frames, symbols) {
            if let known {
                made.append(known)
            } else {
                let name = namer.name(frame)
                if let symbol = frame.symbol { new.append((symbol, name)) }
                made.append(name)
            }
        }
        named.withLock { named in
            named.stacks[index] = made
            for (symbol, name) in new { named.symbols[symbol] = name }
        }
        return made
    }
}
