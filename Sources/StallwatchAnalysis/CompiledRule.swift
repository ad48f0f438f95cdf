// Rules prepared for matching many samples. Every rule's symbol patterns go into one table
// (exact names hashed, prefixes bucketed by first byte), so each frame is looked up once for
// all rules instead of once per rule: the cost grows with frames, not frames × rules.

import StallwatchCore

struct CompiledRule: Sendable {
    /// The `syscall` name for "blocked outside any syscall" (/proc's `-1`).
    static let outsideSyscall = "none"

    /// The rule's position in the classifier's rules: its bit in `FrameMatcher.Hits`.
    let id: Int
    let name: String
    let category: StallCategory
    let reason: String?
    let reasonFrom: ReasonSource
    let testsFrames: Bool
    let maxDepth: Int
    /// Bit `rawValue` set for each accepted state; 0 = not tested.
    let stateMask: UInt16
    /// Accepted syscall numbers; empty = not tested.
    let syscalls: Set<Int32>
    /// The counter conditions; `nil`/empty = not tested.
    let cpu: CPUShare?
    let minDelta: [(KernelCounter, UInt64)]
    /// Bit `rawValue` set for each accepted wait kind; 0 = not tested.
    let waitMask: UInt16

    init(_ rule: ClassificationRule, id: Int) {
        self.id = id
        name = rule.name
        category = rule.category
        reason = rule.reason
        reasonFrom = rule.reasonFrom
        testsFrames = rule.match.testsFrames
        maxDepth = rule.match.maxDepth ?? Int.max
        stateMask = rule.match.state.reduce(0) { $0 | (1 << UInt16($1.rawValue)) }
        syscalls = Set(
            rule.match.syscall.map { name in
                if name == CompiledRule.outsideSyscall { return -1 }
                guard let number = SyscallTable.number(for: name) else {
                    preconditionFailure("rule '\(rule.name)': unknown x86_64 syscall '\(name)'")
                }
                return number
            })
        cpu = rule.match.cpu
        waitMask = rule.match.wait.reduce(0) { $0 | (1 << UInt16($1.rawValue)) }
        minDelta = rule.match.minDelta.sorted { $0.key.rawValue < $1.key.rawValue }.map { ($0.key, $0.value) }
    }

    /// The frame indices that decided a match: innermost and outermost matching frame.
    struct Hit {
        var innermost: Int?
        var outermost: Int?
    }

    /// Whether the rule holds for `sample`, given which frames match which rules.
    func match(_ sample: ClassifierInput, _ hits: FrameMatcher.Hits) -> Hit? {
        if stateMask != 0, stateMask & (1 << UInt16(sample.state.rawValue)) == 0 { return nil }
        if !syscalls.isEmpty {
            guard let syscall = sample.syscall, syscalls.contains(syscall) else { return nil }
        }
        if waitMask != 0 {
            guard let kind = sample.wait?.kind, waitMask & (1 << UInt16(kind.rawValue)) != 0 else { return nil }
        }
        if cpu != nil || !minDelta.isEmpty {
            guard let delta = sample.countersDelta else { return nil }
            if let cpu, delta.cpuShare != cpu { return nil }
            for (counter, minimum) in minDelta where delta[counter] < minimum { return nil }
        }
        guard testsFrames else { return Hit() }
        var hit = Hit()
        for index in 0..<min(maxDepth, hits.frameCount) where hits.contains(frame: index, rule: id) {
            if hit.innermost == nil {
                hit.innermost = index
                if reasonFrom != .matchOutermost { return hit }
            }
            hit.outermost = index
        }
        return hit.innermost == nil ? nil : hit
    }
}

/// Which rules each frame of a sample satisfies (their frame conditions only).
struct FrameMatcher: Sendable {
    private struct Pattern: Sendable {
        var bytes: [UInt8]
        var rule: Int
    }

    private let wordCount: Int
    /// Exact names by a cheap hash of their bytes (Hasher's per-byte cost dominated).
    private let exact: [UInt64: [Pattern]]
    /// `exactLengths[n]`: some exact name is `n` bytes long (most symbols are skipped unhashed).
    private let exactLengths: [Bool]
    /// Prefix patterns by their first byte.
    private let prefixes: [[Pattern]]
    private let substrings: [Pattern]
    /// Rules that test modules but no symbol: every frame passes their symbol part.
    private let moduleOnlyRules: [Int]
    /// Module patterns of each rule that has some.
    private let modules: [(rule: Int, patterns: [ModulePattern])]
    private let hasFrameRules: Bool

    init(_ rules: [ClassificationRule]) {
        wordCount = max(1, (rules.count + 63) / 64)
        var exact: [UInt64: [Pattern]] = [:]
        var exactLengths = [Bool](repeating: false, count: 257)
        var prefixes = [[Pattern]](repeating: [], count: 256)
        var substrings: [Pattern] = []
        var moduleOnlyRules: [Int] = []
        var modules: [(rule: Int, patterns: [ModulePattern])] = []
        for (id, rule) in rules.enumerated() {
            let match = rule.match
            for name in match.symbol {
                let bytes = Array(name.utf8)
                exact[FrameMatcher.hash(bytes[...]), default: []].append(Pattern(bytes: bytes, rule: id))
                exactLengths[min(bytes.count, 256)] = true
            }
            for prefix in match.symbolPrefix {
                let bytes = Array(prefix.utf8)
                prefixes[Int(bytes[0])].append(Pattern(bytes: bytes, rule: id))
            }
            for needle in match.symbolContains {
                substrings.append(Pattern(bytes: Array(needle.utf8), rule: id))
            }
            if !match.module.isEmpty {
                modules.append((id, match.module.map(ModulePattern.init)))
                if match.symbol.isEmpty && match.symbolPrefix.isEmpty && match.symbolContains.isEmpty {
                    moduleOnlyRules.append(id)
                }
            }
        }
        self.exact = exact
        self.exactLengths = exactLengths
        self.prefixes = prefixes
        self.substrings = substrings
        self.moduleOnlyRules = moduleOnlyRules
        self.modules = modules
        hasFrameRules = rules.contains { $0.match.testsFrames }
    }

    /// A bit per (frame, rule).
    struct Hits {
        let frameCount: Int
        fileprivate let wordCount: Int
        fileprivate var words: [UInt64]

        func contains(frame: Int, rule: Int) -> Bool {
            words[frame * wordCount + rule / 64] & (1 << UInt64(rule % 64)) != 0
        }

        fileprivate mutating func insert(frame: Int, rule: Int) {
            words[frame * wordCount + rule / 64] |= 1 << UInt64(rule % 64)
        }

        fileprivate mutating func remove(frame: Int, rule: Int) {
            words[frame * wordCount + rule / 64] &= ~(1 << UInt64(rule % 64))
        }
    }

    /// One frame with the rules its symbol and module satisfy (a bit per rule).
    struct AnalyzedFrame: Sendable {
        let view: FrameView
        fileprivate let words: [UInt64]
    }

    /// Works out which rules `frame` satisfies; depends only on its symbol and module.
    func analyze(_ frame: Frame) -> AnalyzedFrame {
        let view = FrameView(frame)
        guard hasFrameRules else { return AnalyzedFrame(view: view, words: []) }
        var hits = Hits(
            frameCount: 1, wordCount: wordCount, words: [UInt64](repeating: 0, count: wordCount))
        if view.hasSymbol { symbolHits(view, frame: 0, into: &hits) }
        for rule in moduleOnlyRules { hits.insert(frame: 0, rule: rule) }
        for (rule, patterns) in modules where hits.contains(frame: 0, rule: rule) {
            if !patterns.contains(where: { $0.matches(view) }) {
                hits.remove(frame: 0, rule: rule)
            }
        }
        return AnalyzedFrame(view: view, words: hits.words)
    }

    /// The hits of a sample's frames, innermost first.
    func hits(_ frames: [AnalyzedFrame]) -> Hits {
        guard hasFrameRules else { return Hits(frameCount: 0, wordCount: wordCount, words: []) }
        var words: [UInt64] = []
        words.reserveCapacity(frames.count * wordCount)
        for frame in frames { words.append(contentsOf: frame.words) }
        return Hits(frameCount: frames.count, wordCount: wordCount, words: words)
    }

    private func symbolHits(_ view: FrameView, frame: Int, into hits: inout Hits) {
        let bytes = view.bytes
        func exactHit(_ range: Range<Int>?) {
            guard let range, range.count < 256, exactLengths[range.count],
                let candidates = exact[FrameMatcher.hash(bytes[range])]
            else { return }
            for pattern in candidates where bytes[range].elementsEqual(pattern.bytes) {
                hits.insert(frame: frame, rule: pattern.rule)
            }
        }
        func prefixHit(_ range: Range<Int>?) {
            guard let range, !range.isEmpty else { return }
            for pattern in prefixes[Int(bytes[range.lowerBound])]
            where SymbolName.has(bytes, range, prefix: pattern.bytes) {
                hits.insert(frame: frame, rule: pattern.rule)
            }
        }
        let whole = 0..<bytes.count
        exactHit(whole)
        exactHit(view.cName)
        exactHit(view.swiftName)
        prefixHit(whole)
        prefixHit(view.cName)
        prefixHit(view.swiftName)
        prefixHit(view.unqualified)
        for pattern in substrings where SymbolName.contains(bytes, pattern.bytes) {
            hits.insert(frame: frame, rule: pattern.rule)
        }
    }

    /// FNV-1a over the bytes.
    static func hash(_ bytes: ArraySlice<UInt8>) -> UInt64 { FNV1a.hash(bytes) }
}

/// A rule's module condition: a name matches the module's file name exactly or up to a `.`
/// (`libsqlite3` matches `libsqlite3.so.0`); a pattern containing `/` is a path prefix.
private struct ModulePattern: Sendable {
    let bytes: [UInt8]
    let isPath: Bool

    init(_ pattern: String) {
        bytes = Array(pattern.utf8)
        isPath = bytes.contains(UInt8(ascii: "/"))
    }

    func matches(_ view: FrameView) -> Bool {
        if isPath {
            return view.modulePath?.utf8.starts(with: bytes) ?? false
        }
        guard let name = view.moduleName, name.utf8.starts(with: bytes) else { return false }
        let rest = name.utf8.dropFirst(bytes.count)
        return rest.isEmpty || rest.first == UInt8(ascii: ".")
    }
}
