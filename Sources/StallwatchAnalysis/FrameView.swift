// The names a rule may test for one frame, computed once per frame per sample as byte
// ranges into the symbol's UTF-8: reports classify hundreds of thousands of frames, so no
// per-name strings, no regex.

import StallwatchCore

struct FrameView: Sendable {
    /// The symbol's UTF-8 bytes (empty when the frame has no symbol).
    let bytes: [UInt8]
    /// Whether the frame has a symbol.
    let hasSymbol: Bool
    /// For C symbols: the name without glibc decorations
    /// (`__GI___libc_write@@GLIBC_2.2.5` → `write`).
    private(set) var cName: Range<Int>?
    /// For Swift symbols: the function without thunk/closure/specialization wrappers and
    /// return type (`closure #1 () -> () in MyApp.Feed.reload() -> ()` → `MyApp.Feed.reload()`).
    private(set) var swiftName: Range<Int>?
    /// `swiftName` without its module (`Feed.reload()`).
    private(set) var unqualified: Range<Int>?
    /// The module's file name (`libc.so.6`).
    let moduleName: Substring?
    /// The module's path.
    let modulePath: String?
    /// `Frame.isSystem`, worked out once.
    let isSystem: Bool

    init(_ frame: Frame) {
        modulePath = frame.module
        isSystem = frame.isSystem
        moduleName = frame.module.map(Frame.basename)
        bytes = frame.symbol.map { Array($0.utf8) } ?? []
        hasSymbol = !bytes.isEmpty
        guard hasSymbol else { return }
        if SymbolName.isCName(bytes) {
            cName = SymbolName.normalizedC(bytes)
        } else {
            let core = SymbolName.swiftCore(bytes)
            swiftName = core
            if let dot = bytes[core].firstIndex(of: UInt8(ascii: ".")), dot + 1 < core.upperBound {
                unqualified = (dot + 1)..<core.upperBound
            }
        }
    }

    /// The text of a range of `bytes`.
    func text(_ range: Range<Int>?) -> String? {
        range.map { String(decoding: bytes[$0], as: UTF8.self) }
    }

    /// The name a reason shows for this frame (nil if the frame has no symbol).
    var reasonName: String? {
        if let cName {
            let name = String(decoding: bytes[cName], as: UTF8.self)
            return SymbolName.syscallSpelling[name] ?? name
        }
        return text(swiftName)
    }
}

enum SymbolName {
    /// glibc wrapper names that differ from the syscall they make (reasons use the syscall's).
    static let syscallSpelling: [String: String] = [
        "pread": "pread64", "pwrite": "pwrite64", "open64": "open", "openat64": "openat",
        "stat64": "stat", "fstat64": "fstat", "lstat64": "lstat", "preadv64": "preadv",
        "pwritev64": "pwritev", "preadv64v2": "preadv2", "pwritev64v2": "pwritev2",
        "ftruncate64": "ftruncate", "fallocate64": "fallocate", "fstatat64": "newfstatat",
        "fstatat": "newfstatat",
    ]

    /// Whether `symbol` looks like a C name: none of the punctuation a demangled Swift or
    /// C++ name has, before any symbol version (`@GLIBC_2.2.5` has dots).
    static func isCName(_ symbol: [UInt8]) -> Bool {
        for byte in symbol {
            switch byte {
            case UInt8(ascii: "@"):
                return true
            case UInt8(ascii: "."), UInt8(ascii: "("), UInt8(ascii: " "), UInt8(ascii: "<"),
                UInt8(ascii: ":"):
                return false
            default:
                continue
            }
        }
        return true
    }

    /// Strips what glibc adds around a public name: a symbol version, leading underscores,
    /// the `GI_` and `libc_` internal prefixes, the `_nocancel` suffix.
    static func normalizedC(_ symbol: [UInt8]) -> Range<Int> {
        var lower = 0
        var upper = symbol.firstIndex(of: UInt8(ascii: "@")) ?? symbol.count
        while true {
            while lower < upper && symbol[lower] == UInt8(ascii: "_") { lower += 1 }
            if has(symbol, lower..<upper, prefix: gi) {
                lower += gi.count
            } else if has(symbol, lower..<upper, prefix: libc) {
                lower += libc.count
            } else {
                break
            }
        }
        if upper - lower > nocancel.count,
            symbol[(upper - nocancel.count)..<upper].elementsEqual(nocancel)
        {
            upper -= nocancel.count
        }
        return lower < upper ? lower..<upper : 0..<symbol.count
    }

    private static let gi = Array("GI_".utf8)
    private static let libc = Array("libc_".utf8)
    private static let nocancel = Array("_nocancel".utf8)
    private static let wrapperPrefixes = [
        "partial apply for ", "merged ", "protocol witness for ", "dispatch thunk of ",
        "@objc ", "static ", "specialized ", "outlined copy of ", "outlined consume of ",
    ].map { Array($0.utf8) }
    private static let genericSpecialization = Array("generic specialization ".utf8)
    private static let closurePrefixes = ["closure #", "implicit closure #"].map { Array($0.utf8) }
    private static let of = Array(" of ".utf8)
    private static let `in` = Array(" in ".utf8)
    private static let arrow = Array(" -> ".utf8)

    /// The function a Swift symbol belongs to, without wrappers and return type.
    static func swiftCore(_ symbol: [UInt8]) -> Range<Int> {
        var range = 0..<symbol.count
        var changed = true
        while changed {
            changed = false
            for prefix in wrapperPrefixes where has(symbol, range, prefix: prefix) {
                range = (range.lowerBound + prefix.count)..<range.upperBound
                changed = true
            }
            if has(symbol, range, prefix: genericSpecialization),
                let found = topLevel(
                    of, in: symbol, (range.lowerBound + genericSpecialization.count)..<range.upperBound)
            {
                range = found.upperBound..<range.upperBound
                changed = true
            }
            if closurePrefixes.contains(where: { has(symbol, range, prefix: $0) }),
                let found = topLevel(`in`, in: symbol, range)
            {
                range = found.upperBound..<range.upperBound
                changed = true
            }
        }
        if let found = topLevel(arrow, in: symbol, range) {
            range = range.lowerBound..<found.lowerBound
        }
        return range.isEmpty ? 0..<symbol.count : range
    }

    /// Whether `bytes[range]` starts with `prefix`.
    static func has(_ bytes: [UInt8], _ range: Range<Int>, prefix: [UInt8]) -> Bool {
        guard range.count >= prefix.count else { return false }
        var index = range.lowerBound
        for byte in prefix {
            if bytes[index] != byte { return false }
            index += 1
        }
        return true
    }

    /// The first occurrence of `needle` in `bytes[range]` outside any (), <>, [] nesting.
    /// The `>` of `->` is not a bracket.
    static func topLevel(_ needle: [UInt8], in bytes: [UInt8], _ range: Range<Int>) -> Range<Int>? {
        var depth = 0
        var index = range.lowerBound
        while index < range.upperBound {
            let byte = bytes[index]
            if depth == 0, byte == needle[0], has(bytes, index..<range.upperBound, prefix: needle) {
                return index..<(index + needle.count)
            }
            switch byte {
            case UInt8(ascii: "("), UInt8(ascii: "<"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: ")"), UInt8(ascii: "]"):
                depth = max(0, depth - 1)
            case UInt8(ascii: ">") where index == 0 || bytes[index - 1] != UInt8(ascii: "-"):
                depth = max(0, depth - 1)
            default:
                break
            }
            index += 1
        }
        return nil
    }

    /// Whether `needle` occurs in `bytes`.
    static func contains(_ bytes: [UInt8], _ needle: [UInt8]) -> Bool {
        guard let first = needle.first else { return true }
        guard bytes.count >= needle.count else { return false }
        var index = 0
        let last = bytes.count - needle.count
        while index <= last {
            if bytes[index] == first && has(bytes, index..<bytes.count, prefix: needle) { return true }
            index += 1
        }
        return false
    }
}
