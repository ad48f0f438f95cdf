import StallwatchCore

/// One signature's numbers added up one stall at a time, in a single pass over every trace's
/// stalls: what `ReportBuilder.signatures` turns into a `StallReport.Signature`.
///
/// Stalls are named by their trace's index and their index in it, and traces' hosts and builds
/// by small numbers (`TraceOrigins`), so adding a stall copies none of it and hashes no path:
/// grouping copies of whole stalls and looking facts up by path was most of a fleet report's
/// time after the traces were analyzed.
struct SignatureTally {
    /// A stall: its trace's index and its index among that trace's analyzed stalls.
    struct Member {
        var trace: Int
        var stall: Int
    }

    /// A registration site, as a key (made into `file:line` text once, at the end).
    struct Site: Hashable {
        var file: String
        var line: UInt32
    }

    /// Stalls and the distinct traces they are in, for one build or host.
    struct Group {
        var stalls = 0
        var traces = Set<Int>()

        /// Counts a stall of trace `trace`.
        mutating func add(_ trace: Int) {
            stalls += 1
            traces.insert(trace)
        }

        /// Takes in `other`'s stalls and traces, in place (`union` made a new set per merge,
        /// copying every trace seen so far: quadratic in the runs merged).
        mutating func formUnion(_ other: Group) {
            stalls += other.stalls
            traces.formUnion(other.traces)
        }
    }

    var count = 0
    var totalNanos: UInt64 = 0
    /// The longest stall (the earliest of equally long ones), with its duration and start.
    var longest: (member: Member, nanos: UInt64, start: UInt64)?
    var tiers: [Tier: Int] = [:]
    /// Duration-weighted category shares, in `StallCategory.allCases` order.
    var categoryNanos = [Double](repeating: 0, count: StallCategory.allCases.count)
    var reasons: [String: Double] = [:]
    var sites: [Site: Int] = [:]
    var waits = WaitSummary.Tally()
    var durations: [UInt64] = []
    var traces = Set<Int>()
    var firstSeen: UInt64?
    var lastSeen: UInt64?
    var builds: [Int: Group] = [:]
    var hosts: [Int: Group] = [:]

    /// Adds `stall`, which is `member`, of signature `key`.
    mutating func add(_ stall: AnalyzedStall, member: Member, key: SignatureKey, origins: TraceOrigins) {
        let nanos = stall.durationNanos
        let start = stall.stall.start
        count += 1
        totalNanos += nanos
        consider((member, nanos, start))
        tiers[stall.stall.tier, default: 0] += 1
        sites[Site(file: stall.stall.callout.file, line: stall.stall.callout.line), default: 0] += 1
        let weight = Double(max(1, nanos))
        for (index, category) in StallCategory.allCases.enumerated() {
            categoryNanos[index] += stall.breakdown.share(of: category) * weight
        }
        for reason in stall.breakdown.topReasons where reason.category == key.category {
            reasons[reason.reason, default: 0] += reason.share * weight
        }
        waits.add(stall.stall)
        durations.append(nanos)
        traces.insert(member.trace)
        if let wall = origins.facts[member.trace]?.wallClock(start) {
            firstSeen = min(firstSeen ?? wall, wall)
            lastSeen = max(lastSeen ?? wall, wall)
        }
        builds[origins.build[member.trace], default: Group()].add(member.trace)
        hosts[origins.host[member.trace], default: Group()].add(member.trace)
    }

    /// Makes `candidate` the longest if it is longer than the longest so far, or as long and
    /// earlier (of the very same length and start, the one seen first stays).
    private mutating func consider(_ candidate: (member: Member, nanos: UInt64, start: UInt64)) {
        if let best = longest,
            candidate.nanos < best.nanos || (candidate.nanos == best.nanos && candidate.start >= best.start)
        {
            return
        }
        longest = candidate
    }

    /// Adds the stalls `other` added up, which came after these (so of equally long stalls,
    /// this one's stays the longest, as adding them one by one would keep it).
    mutating func merge(_ other: SignatureTally) {
        count += other.count
        totalNanos += other.totalNanos
        if let theirs = other.longest { consider(theirs) }
        tiers.merge(other.tiers, uniquingKeysWith: +)
        for index in categoryNanos.indices { categoryNanos[index] += other.categoryNanos[index] }
        reasons.merge(other.reasons, uniquingKeysWith: +)
        sites.merge(other.sites, uniquingKeysWith: +)
        waits.merge(other.waits)
        durations += other.durations
        traces.formUnion(other.traces)
        firstSeen = [firstSeen, other.firstSeen].compactMap { $0 }.min()
        lastSeen = [lastSeen, other.lastSeen].compactMap { $0 }.max()
        for (build, group) in other.builds { builds[build, default: Group()].formUnion(group) }
        for (host, group) in other.hosts { hosts[host, default: Group()].formUnion(group) }
    }

    /// The signature `key` these stalls make; `stalls[trace][stall]` are the analyzed stalls,
    /// `traceCount` the traces read (for the share of traces affected).
    func signature(
        _ key: SignatureKey, stalls: [[AnalyzedStall]], origins: TraceOrigins, traceCount: Int
    ) -> StallReport.Signature {
        let best = longest!.member
        let longest = stalls[best.trace][best.stall]
        let categoryTotal = categoryNanos.reduce(0, +)
        let siteList = sites.map { StallReport.SiteCount(site: "\($0.key.file):\($0.key.line)", count: $0.value) }
            .sorted { ($1.count, $0.site) < ($0.count, $1.site) }
        let reason = reasons.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key ?? ""
        let stack = longest.representativeFrames.map { ReportBuilder.stackFrame($0, names: longest.names) }
        var signature = StallReport.Signature(
            category: key.category, frames: key.frames, count: count, totalMs: ms(totalNanos),
            maxMs: ms(longest.durationNanos), tiers: tiers,
            categoryShares: Dictionary(
                uniqueKeysWithValues: StallCategory.allCases.enumerated().map {
                    ($0.element, categoryTotal == 0 ? 0 : round(categoryNanos[$0.offset] / categoryTotal, 4))
                }),
            reason: reason, site: siteList.first?.site ?? "", sites: siteList, stack: stack,
            stackConfidence: longest.representative?.confidence ?? 0,
            example: StallReport.StallReference(trace: longest.tracePath, stall: longest.stall.id))
        let waits = waits.top(limit: 3)
        signature.waits = waits.isEmpty ? nil : waits
        signature.traces = traces.count
        let total = max(traceCount, traces.count)
        signature.tracesPercent = total == 0 ? 0 : round(Double(traces.count) / Double(total) * 100, 2)
        let sorted = durations.sorted()
        signature.p50Ms = ms(nearestRank(sorted, 0.50))
        signature.p95Ms = ms(nearestRank(sorted, 0.95))
        signature.firstSeen = firstSeen.map(isoTime)
        signature.lastSeen = lastSeen.map(isoTime)
        signature.builds = Self.list(builds, names: origins.names)
        signature.hosts = Self.list(hosts, names: origins.names)
        return signature
    }

    /// Stalls and traces per group name, most stalls first (then name).
    static func list(_ groups: [Int: Group], names: [String]) -> [StallReport.GroupCount] {
        groups.map {
            StallReport.GroupCount(name: names[$0.key], stalls: $0.value.stalls, traces: $0.value.traces.count)
        }
        .sorted { ($1.stalls, $0.name) < ($0.stalls, $1.name) }
    }
}

/// Each trace's facts, and its build and host as indices into one list of names (`unknown`
/// for a trace that does not say), so stalls are grouped by them without hashing strings.
struct TraceOrigins {
    var facts: [TraceFacts?]
    var build: [Int]
    var host: [Int]
    var names: [String]

    init(_ facts: [TraceFacts?]) {
        self.facts = facts
        var index: [String: Int] = [:]
        var names: [String] = []
        func number(_ name: String) -> Int {
            if let known = index[name] { return known }
            index[name] = names.count
            names.append(name)
            return names.count - 1
        }
        build = facts.map { number($0?.build ?? "unknown") }
        host = facts.map { number($0?.host ?? "unknown") }
        self.names = names
    }
}
