/// One frame of a captured backtrace, symbolicated as far as was possible.
///
/// A plain value; use it on any thread.
public struct Frame: Sendable, Hashable, Codable {
    /// The return address (or, for the innermost frame, the interrupted program counter).
    public var address: UInt64
    /// The demangled function name (`"Foundation.NSLock.lock() -> ()"`, `"fsync"`), if known.
    public var symbol: String?
    /// The path of the image holding `address`
    /// (`"/usr/lib/x86_64-linux-gnu/libc.so.6"`), if known.
    public var module: String?
    /// The source file, if debug information named it.
    public var file: String?
    /// The source line, if debug information named it.
    public var line: UInt32?
    /// An awaiting caller read from the async context chain, not from the stack: `address` is
    /// the entry of the function that resumes it (exact, not a return address), and the frame
    /// is shown marked async (docs/async.md).
    public var isAsync: Bool

    /// Creates a frame. Inlinable: the decoder makes one per distinct address of every trace.
    @inlinable
    public init(
        address: UInt64,
        symbol: String? = nil,
        module: String? = nil,
        file: String? = nil,
        line: UInt32? = nil,
        isAsync: Bool = false
    ) {
        self.address = address
        self.symbol = symbol
        self.module = module
        self.file = file
        self.line = line
        self.isAsync = isAsync
    }

    private enum CodingKeys: String, CodingKey {
        case address, symbol, module, file, line
        case isAsync = "async"
    }

    /// Decodes a frame; `async` is absent for a frame of the stack.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            address: try container.decode(UInt64.self, forKey: .address),
            symbol: try container.decodeIfPresent(String.self, forKey: .symbol),
            module: try container.decodeIfPresent(String.self, forKey: .module),
            file: try container.decodeIfPresent(String.self, forKey: .file),
            line: try container.decodeIfPresent(UInt32.self, forKey: .line),
            isAsync: try container.decodeIfPresent(Bool.self, forKey: .isAsync) ?? false)
    }

    /// Encodes the frame, `async: true` only for an async caller.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(address, forKey: .address)
        try container.encodeIfPresent(symbol, forKey: .symbol)
        try container.encodeIfPresent(module, forKey: .module)
        try container.encodeIfPresent(file, forKey: .file)
        try container.encodeIfPresent(line, forKey: .line)
        if isAsync { try container.encode(true, forKey: .isAsync) }
    }

    /// Whether the frame belongs to the system rather than the app: its module is under
    /// `/lib`, `/lib64`, `/usr/lib` or `/usr/lib64`, is the Swift runtime or a toolchain
    /// library (`…/lib/swift/…`, `libswift*`, `libFoundation*`, `libdispatch`…), the vDSO,
    /// or is unknown.
    public var isSystem: Bool {
        guard let module else { return true }
        if let symbol, Frame.isInfrastructure(symbol) || Frame.isToolchainLibrary(symbol) { return true }
        return Frame.isSystemModule(module)
    }

    /// The toolchain's Swift libraries' code compiled into the app's binary — a generic of the
    /// standard library, Concurrency, Foundation or Dispatch specialised or inlined there
    /// (`(extension in Swift):Swift.Task<…>.init(name:priority:operation:)`, `generic
    /// specialization <Swift.Int> of Swift.Array.sort() -> ()`): the toolchain's, as the same
    /// code is in `libswiftCore.so`. Read from the module the function is defined in (an
    /// extension's, not its type's: `(extension in FeedApp):Swift.Array.chunks()` is the
    /// app's). A protocol witness is left to the module: it may be the app's conformance with
    /// the app's code inlined into it.
    static func isToolchainLibrary(_ symbol: String) -> Bool {
        guard let module = definingModule(of: standsFor(symbol)) else { return false }
        return StallwatchSymbols.toolchainSwiftModules.contains(String(module))
    }

    /// An ASCII letter, digit or underscore: what a module name is made of.
    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "_") || (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
            || byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// The module a demangled function is defined in: an extension's module, else the first
    /// component of its qualified name; nil for a protocol witness or an unqualified name.
    static func definingModule(of function: Substring) -> Substring? {
        var rest = function
        while true {
            if rest.hasPrefix("protocol witness for ") { return nil }
            if let tail = rest.dropping("static ") ?? rest.dropping("@objc ") {
                rest = tail
            } else if let tail = rest.dropping("(extension in "), let close = tail.firstIndex(of: ")") {
                return tail[..<close]
            } else if rest.hasPrefix("closure #") || rest.hasPrefix("implicit closure #"),
                let offset = rest.utf8Offset(of: " in ")
            {
                rest = rest[rest.utf8.index(rest.utf8.startIndex, offsetBy: offset + 4)...]
            } else {
                guard let dot = rest.firstIndex(of: "."), dot > rest.startIndex,
                    rest[..<dot].utf8.allSatisfy(isIdentifierByte)
                else { return nil }
                return rest[..<dot]
            }
        }
    }

    /// Stallwatch's own run loop and monitor, compiled into the app: not the app's code, in
    /// any form the optimizer gives it (`function signature specialization <…> of
    /// Stallwatch.MainLoop.fireTimers(…)`, a partial-apply forwarder, a merged function).
    /// Executors' dispatch code (swift-nio's pipeline and loops, `StallwatchSymbols.executorPrefixes`)
    /// likewise, in its closures, protocol witnesses and extensions too: whose code it is, is
    /// read from the function's own name (`owner(of:)`), never from its parameter types.
    static func isInfrastructure(_ symbol: String) -> Bool {
        let function = owner(of: standsFor(symbol))
        return StallwatchSymbols.infrastructurePrefixes.contains { function.utf8.starts(with: $0.utf8) }
    }

    /// The function `function` is part of: a closure's enclosing function (`closure #2 (Int) ->
    /// () in NIOHTTP1.BetterHTTPParser.init(…)`), the requirement a protocol witness stands for,
    /// a member of an extension without its `(extension in M):` marker.
    static func owner(of function: Substring) -> Substring {
        var rest = function
        while true {
            if let tail = rest.dropping("protocol witness for ") ?? rest.dropping("static ")
                ?? rest.dropping("@objc ")
            {
                rest = tail
            } else if let tail = rest.dropping("(extension in "), let colon = tail.firstIndex(of: ":") {
                rest = tail[tail.index(after: colon)...]
            } else if rest.hasPrefix("closure #") || rest.hasPrefix("implicit closure #"),
                let offset = rest.utf8Offset(of: " in ")
            {
                rest = rest[rest.utf8.index(rest.utf8.startIndex, offsetBy: offset + 4)...]
            } else {
                return rest
            }
        }
    }

    /// The function a demangled `symbol` stands for, without the wrappers the optimizer adds:
    /// `generic specialization <…> of`, `function signature specialization <…> of` (whose
    /// `<…>` the demangler leaves with an unclosed `[`), `partial apply forwarder for`,
    /// `merged`, and an async function's continuations (`(1) suspend resume partial function
    /// for`, `(2) await resume partial function for`). The symbol itself when it has none.
    package static func standsFor(_ symbol: String) -> Substring {
        var rest = Substring(symbol)
        while let first = rest.utf8.first, wrapperInitials.contains(first) {
            if let tail = rest.dropping("partial apply forwarder for ") ?? rest.dropping("merged ") {
                rest = tail
                continue
            }
            if first == UInt8(ascii: "("), let close = rest.firstIndex(of: ")"),
                let tail = rest[rest.index(after: close)...].dropping(" suspend resume partial function for ")
                    ?? rest[rest.index(after: close)...].dropping(" await resume partial function for ")
            {
                rest = tail
                continue
            }
            guard
                let opening = rest.dropping("generic specialization <")
                    ?? rest.dropping("function signature specialization <"),
                let tail = opening.afterClosingAngle()?.dropping(" of ")
            else { break }
            rest = tail
        }
        return rest
    }

    /// Whether a demangled `symbol` names async code: an async function's continuation (`(1)
    /// suspend resume partial function for …`, `(2) await resume partial function for …`) or a
    /// function whose type is `async` (its entry, before its first suspension).
    /// A symbol the demangler could not take whole keeps the mangled continuation suffix
    /// (`… with unmangled suffix ".68TQ0_"`): `TQ<n>_` and `TY<n>_` mark continuations, as Swift's
    /// own backtracer reads them.
    package static func isAsyncFunction(_ symbol: String) -> Bool {
        if symbol.utf8Offset(of: " resume partial function for ") != nil || symbol.utf8Offset(of: ") async") != nil {
            return true
        }
        guard symbol.utf8Offset(of: "with unmangled suffix ") != nil else { return false }
        var tail = symbol.utf8.reversed().drop { $0 == UInt8(ascii: "\"") }.makeIterator()
        guard tail.next() == UInt8(ascii: "_") else { return false }
        var digits = 0
        var byte = tail.next()
        while let digit = byte, digit >= UInt8(ascii: "0") && digit <= UInt8(ascii: "9") {
            digits += 1
            byte = tail.next()
        }
        guard digits > 0, byte == UInt8(ascii: "Q") || byte == UInt8(ascii: "Y") else { return false }
        return tail.next() == UInt8(ascii: "T")
    }

    /// The first bytes of the wrappers `standsFor` removes: a name starting with none of them
    /// has none.
    package static let wrapperInitials: Set<UInt8> = [
        UInt8(ascii: "g"), UInt8(ascii: "f"), UInt8(ascii: "p"), UInt8(ascii: "m"), UInt8(ascii: "("),
    ]

    static func isSystemModule(_ path: String) -> Bool {
        for prefix in systemDirectories where path.utf8HasPrefix(prefix) { return true }
        if path.utf8Offset(of: "/lib/swift/") != nil { return true }
        // The last component, compared as bytes from its start.
        let name =
            path.utf8.lastIndex(of: UInt8(ascii: "/")).map {
                path.utf8.distance(from: path.utf8.startIndex, to: $0) + 1
            } ?? 0
        if path.utf8HasPrefix("linux-vdso", from: name) { return true }
        if path.utf8.count - name == 6 && path.utf8HasPrefix("[vdso]", from: name) { return true }
        for prefix in toolchainLibraryPrefixes where path.utf8HasPrefix(prefix, from: name) { return true }
        return path.utf8HasPrefix(StallwatchSymbols.preloadLibrary, from: name)
            || path.utf8HasPrefix(StallwatchSymbols.preloadShim, from: name)
    }

    private static let systemDirectories = ["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/"]

    private static let toolchainLibraryPrefixes = [
        "libswift", "libFoundation", "lib_Foundation", "libdispatch.so", "libBlocksRuntime",
        "libXCTest", "libTesting", "lib_Testing",
    ]

    /// The last component of `path` (`libc.so.6` for `/usr/lib/x86_64-linux-gnu/libc.so.6`).
    package static func basename(_ path: String) -> Substring {
        if let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) {
            return path[path.utf8.index(after: slash)...]
        }
        return path[...]
    }
}

extension Substring {
    /// What follows `prefix`, if this starts with it.
    fileprivate func dropping(_ prefix: String) -> Substring? {
        utf8.starts(with: prefix.utf8) ? Substring(utf8.dropFirst(prefix.utf8.count)) : nil
    }

    /// What follows the `>` that closes an angle bracket already open (counting only angle
    /// brackets, an arrow's `>` not among them), nil if none does.
    fileprivate func afterClosingAngle() -> Substring? {
        var depth = 1
        var previous: UInt8 = 0
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "<") {
                depth += 1
            } else if byte == UInt8(ascii: ">") && previous != UInt8(ascii: "-") {
                depth -= 1
                if depth == 0 { return Substring(utf8[utf8.index(after: index)...]) }
            }
            previous = byte
            index = utf8.index(after: index)
        }
        return nil
    }
}
