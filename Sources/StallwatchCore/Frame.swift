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

    /// Creates a frame.
    public init(
        address: UInt64,
        symbol: String? = nil,
        module: String? = nil,
        file: String? = nil,
        line: UInt32? = nil
    ) {
        self.address = address
        self.symbol = symbol
        self.module = module
        self.file = file
        self.line = line
    }

    /// Whether the frame belongs to the system rather than the app: its module is under
    /// `/lib`, `/lib64`, `/usr/lib` or `/usr/lib64`, is the Swift runtime or a toolchain
    /// library (`…/lib/swift/…`, `libswift*`, `libFoundation*`, `libdispatch`…), the vDSO,
    /// or is unknown.
    public var isSystem: Bool {
        guard let module else { return true }
        if let symbol, Frame.isInfrastructure(symbol) { return true }
        return Frame.isSystemModule(module)
    }

    /// Stallwatch's own run loop and monitor, compiled into the app: not the app's code.
    static func isInfrastructure(_ symbol: String) -> Bool {
        StallwatchSymbols.infrastructurePrefixes.contains { symbol.utf8HasPrefix($0) }
    }

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
        return false
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
