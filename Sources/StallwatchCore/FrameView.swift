// The names a rule may test for one frame, computed once per frame per sample as
// substrings of the frame's own strings: no allocation, no regex.

struct FrameView {
  /// The symbol as captured.
  var raw: Substring?
  /// For C symbols: without glibc decorations (`__GI___libc_write@@GLIBC_2.2.5` → `write`).
  var cName: Substring?
  /// For Swift symbols: without thunk/closure/specialization wrappers and return type
  /// (`closure #1 () -> () in MyApp.Feed.reload() -> ()` → `MyApp.Feed.reload()`).
  var swiftName: Substring?
  /// `swiftName` without its module (`Feed.reload()`).
  var unqualified: Substring?
  /// The module's file name (`libc.so.6`).
  var moduleName: Substring?
  /// The module's path.
  var modulePath: String?

  init(_ frame: Frame) {
    modulePath = frame.module
    moduleName = frame.module.map(Frame.basename)
    guard let symbol = frame.symbol, !symbol.isEmpty else { return }
    raw = symbol[...]
    if SymbolName.isCName(symbol) {
      cName = SymbolName.normalizedC(symbol[...])
    } else {
      let core = SymbolName.swiftCore(symbol[...])
      swiftName = core
      if let dot = core.firstIndex(of: "."), core.index(after: dot) < core.endIndex {
        unqualified = core[core.index(after: dot)...]
      }
    }
  }

  /// The name a reason shows for this frame (nil if the frame has no symbol).
  var reasonName: String? {
    if let cName { return SymbolName.syscallSpelling[cName] ?? String(cName) }
    if let swiftName { return String(swiftName) }
    return nil
  }
}

enum SymbolName {
  /// glibc wrapper names that differ from the syscall they make (reasons use the syscall's).
  static let syscallSpelling: [Substring: String] = [
    "pread": "pread64", "pwrite": "pwrite64", "open64": "open", "openat64": "openat",
    "stat64": "stat", "fstat64": "fstat", "lstat64": "lstat", "preadv64": "preadv",
    "pwritev64": "pwritev", "preadv64v2": "preadv2", "pwritev64v2": "pwritev2",
    "ftruncate64": "ftruncate", "fallocate64": "fallocate", "fstatat64": "newfstatat",
    "fstatat": "newfstatat",
  ]

  /// Whether `symbol` looks like a C name: no punctuation a demangled Swift or C++
  /// name would have before a symbol version (`@GLIBC_2.2.5` has dots).
  static func isCName(_ symbol: String) -> Bool {
    for byte in symbol.utf8 {
      switch byte {
      case UInt8(ascii: "@"):
        return true
      case UInt8(ascii: "."), UInt8(ascii: "("), UInt8(ascii: " "), UInt8(ascii: "<"),
        UInt8(ascii: ":"):
        return false
      default: continue
      }
    }
    return true
  }

  /// Strips what glibc adds around a public name: a symbol version, leading underscores,
  /// the `GI_` and `libc_` internal prefixes, the `_nocancel` suffix.
  static func normalizedC(_ symbol: Substring) -> Substring {
    var name = symbol
    if let at = name.firstIndex(of: "@") { name = name[..<at] }
    while true {
      while name.first == "_" { name = name.dropFirst() }
      if name.hasPrefix("GI_") {
        name = name.dropFirst(3)
      } else if name.hasPrefix("libc_") {
        name = name.dropFirst(5)
      } else {
        break
      }
    }
    if name.hasSuffix("_nocancel") { name = name.dropLast(9) }
    return name.isEmpty ? symbol : name
  }

  private static let wrapperPrefixes = [
    "partial apply for ", "merged ", "protocol witness for ", "dispatch thunk of ",
    "@objc ", "static ", "specialized ", "outlined copy of ", "outlined consume of ",
  ]

  /// The function a Swift symbol belongs to, without wrappers and return type.
  static func swiftCore(_ symbol: Substring) -> Substring {
    var name = symbol
    var changed = true
    while changed {
      changed = false
      for prefix in wrapperPrefixes where name.hasPrefix(prefix) {
        name = name.dropFirst(prefix.count)
        changed = true
      }
      if name.hasPrefix("generic specialization <"),
        let of = topLevelRange(of: " of ", in: name.dropFirst("generic specialization ".count))
      {
        name = name[of.upperBound...]
        changed = true
      }
      if name.hasPrefix("closure #") || name.hasPrefix("implicit closure #"),
        let inRange = topLevelRange(of: " in ", in: name)
      {
        name = name[inRange.upperBound...]
        changed = true
      }
    }
    if let arrow = topLevelRange(of: " -> ", in: name) {
      name = name[..<arrow.lowerBound]
    }
    return name.isEmpty ? symbol : name
  }

  /// The first occurrence of `needle` outside any (), <>, [] nesting. `->` is not a bracket.
  static func topLevelRange(of needle: String, in text: Substring) -> Range<Substring.Index>? {
    let bytes = text.utf8
    let first = needle.utf8.first!
    var depth = 0
    var index = bytes.startIndex
    var previous: UInt8 = 0
    while index < bytes.endIndex {
      let byte = bytes[index]
      if depth == 0, byte == first, bytes[index...].starts(with: needle.utf8) {
        let end = bytes.index(index, offsetBy: needle.utf8.count)
        return index..<end
      }
      switch byte {
      case UInt8(ascii: "("), UInt8(ascii: "<"), UInt8(ascii: "["):
        depth += 1
      case UInt8(ascii: ")"), UInt8(ascii: "]"):
        depth = max(0, depth - 1)
      case UInt8(ascii: ">") where previous != UInt8(ascii: "-"):
        depth = max(0, depth - 1)
      default:
        break
      }
      previous = byte
      index = bytes.index(after: index)
    }
    return nil
  }

  /// Whether `needle` occurs in `haystack`, comparing UTF-8 bytes.
  static func contains(_ haystack: Substring, _ needle: [UInt8]) -> Bool {
    guard let first = needle.first else { return true }
    let bytes = haystack.utf8
    var index = bytes.startIndex
    while index < bytes.endIndex {
      if bytes[index] == first, bytes[index...].starts(with: needle) { return true }
      index = bytes.index(after: index)
    }
    return false
  }
}
