// A rule prepared for matching many samples: sets and byte strings instead of lists of
// names, syscall names resolved to numbers once.

struct CompiledRule: Sendable {
  let name: String
  let category: StallCategory
  let reason: String?
  let reasonFrom: ReasonSource
  let testsFrames: Bool
  let exact: Set<Substring>
  let prefixes: [String]
  let contains: [[UInt8]]
  let modules: [String]
  let maxDepth: Int
  /// Bit `rawValue` set for each accepted state; 0 = not tested.
  let stateMask: UInt16
  /// Accepted syscall numbers; empty = not tested.
  let syscalls: Set<Int32>

  init(_ rule: ClassificationRule) {
    name = rule.name
    category = rule.category
    reason = rule.reason
    reasonFrom = rule.reasonFrom
    let match = rule.match
    testsFrames = match.testsFrames
    exact = Set(match.symbol.map { $0[...] })
    prefixes = match.symbolPrefix
    contains = match.symbolContains.map { Array($0.utf8) }
    modules = match.module
    maxDepth = match.maxDepth ?? Int.max
    stateMask = match.state.reduce(0) { $0 | (1 << UInt16($1.rawValue)) }
    syscalls = Set(
      match.syscall.map { name in
        guard let number = SyscallTable.number(for: name) else {
          preconditionFailure("rule '\(rule.name)': unknown x86_64 syscall '\(name)'")
        }
        return number
      })
  }

  /// The frame indices that decided a match: innermost and outermost matching frame.
  struct Hit {
    var innermost: Int?
    var outermost: Int?
  }

  /// Whether the rule holds for `sample`; `views` are the sample's frames.
  func match(_ sample: Sample, _ views: [FrameView]) -> Hit? {
    if stateMask != 0, stateMask & (1 << UInt16(sample.state.rawValue)) == 0 { return nil }
    if !syscalls.isEmpty {
      guard let syscall = sample.syscall, syscalls.contains(syscall) else { return nil }
    }
    guard testsFrames else { return Hit() }
    var hit = Hit()
    let depth = min(maxDepth, views.count)
    for index in 0..<depth where matches(views[index]) {
      if hit.innermost == nil {
        hit.innermost = index
        if reasonFrom != .matchOutermost { return hit }
      }
      hit.outermost = index
    }
    return hit.innermost == nil ? nil : hit
  }

  private func matches(_ frame: FrameView) -> Bool {
    if !modules.isEmpty && !modules.contains(where: { moduleMatches(frame, $0) }) {
      return false
    }
    if exact.isEmpty && prefixes.isEmpty && contains.isEmpty { return true }
    guard let raw = frame.raw else { return false }
    if !exact.isEmpty {
      if exact.contains(raw) { return true }
      if let cName = frame.cName, exact.contains(cName) { return true }
      if let swiftName = frame.swiftName, exact.contains(swiftName) { return true }
    }
    for prefix in prefixes {
      if raw.utf8.starts(with: prefix.utf8) { return true }
      if let cName = frame.cName, cName.utf8.starts(with: prefix.utf8) { return true }
      if let swiftName = frame.swiftName, swiftName.utf8.starts(with: prefix.utf8) {
        return true
      }
      if let unqualified = frame.unqualified, unqualified.utf8.starts(with: prefix.utf8) {
        return true
      }
    }
    for needle in contains where SymbolName.contains(raw, needle) { return true }
    return false
  }

  private func moduleMatches(_ frame: FrameView, _ pattern: String) -> Bool {
    if pattern.utf8.contains(UInt8(ascii: "/")) {
      return frame.modulePath?.utf8.starts(with: pattern.utf8) ?? false
    }
    guard let name = frame.moduleName, name.utf8.starts(with: pattern.utf8) else {
      return false
    }
    let rest = name.utf8.dropFirst(pattern.utf8.count)
    return rest.isEmpty || rest.first == UInt8(ascii: ".")
  }
}
