import StallwatchCore

/// One signature's numbers added up one stall at a time, traces in order: what
/// `SignatureTallies` turns into a `StallReport.Signature`.
///
/// Traces are named by their index, and their hosts and builds found from it at the end
/// (`TraceOrigins`), so adding a stall hashes no path and no name. The longest stall is kept
/// itself (not where it lies), so the other stalls can be let go once added up.
struct SignatureTally: Sendable {
    /// A registration site, as a key (made into `file:line` text once, at the end). The line
    /// comes first, so comparing two sites mostly compares their lines, not their files.
    struct Site: Hashable {
        var line: UInt32
        var file: String
    }

    /// Stalls and traces, for one build or host.
    struct Group {
        var stalls = 0
        var traces = 0
    }

    var count = 0
    var totalNanos: UInt64 = 0
    /// The longest stall (the earliest of equally long ones), with its duration and start.
    var longest: (stall: StallFigures, nanos: UInt64, start: UInt64)?
    /// By position in `Tier.allCases`.
    var tiers = [Int](repeating: 0, count: Tier.allCases.count)
    /// Duration-weighted category shares, in `StallCategory.allCases` order.
    var categoryNanos = [Double](repeating: 0, count: StallCategory.count)
    var reasons = TallyTable<String, Double>()
    var sites = TallyTable<Site, Int>()
    /// The executors blocked (`ExecutorName`; `MainLoop` callouts counted apart).
    var executors = TallyTable<String, Int>()
    var mainLoopStalls = 0
    var waits = WaitSummary.Tally()
    var durations: [UInt64] = []
    /// Each trace with these stalls and how many, in trace order (traces are added in order).
    var traceStalls: [(trace: Int, stalls: Int)] = []
    var firstSeen: UInt64?
    var lastSeen: UInt64?
    /// What the stalls cost the run (`StallReport.Signature.ifFixed`).
    var saving = Saving()

    /// Adds `stalls[index]`, of signature `key`, from trace number `trace` (`facts` are its
    /// facts), which dropped `dropped` frames (`Saving.droppedFrames`), reading its fields where
    /// they lie. Traces come in order: every stall of one before any of the next.
    mutating func add(
        _ stalls: [StallFigures], at index: Int, trace: Int, key: SignatureKey, facts: TraceFacts?, dropped: Double
    ) {
        let nanos = stalls[index].durationNanos
        let start = stalls[index].start
        let tier = stalls[index].tier
        count += 1
        totalNanos += nanos
        if isLonger(nanos, start) { longest = (stalls[index], nanos, start) }
        tiers[tier.ordinal] += 1
        saving.add(overrun: stalls[index].overrunNanos, hang: tier >= .hang ? nanos : 0, dropped: dropped)
        sites.add(1, to: Site(line: stalls[index].line, file: stalls[index].file))
        if let executor = stalls[index].executor { executors.add(1, to: executor) } else { mainLoopStalls += 1 }
        let weight = Double(max(1, nanos))
        for category in StallCategory.allCases {
            categoryNanos[category.ordinal] += stalls[index].breakdown.share(of: category) * weight
        }
        for reason in stalls[index].breakdown.topReasons where reason.category == key.category {
            reasons.add(reason.share * weight, to: reason.reason)
        }
        waits.add(sampleCount: stalls[index].sampleCount, waits: stalls[index].waits)
        durations.append(nanos)
        if let last = traceStalls.indices.last, traceStalls[last].trace == trace {
            traceStalls[last].stalls += 1
        } else {
            traceStalls.append((trace, 1))
        }
        if let wall = facts?.wallClock(start) {
            firstSeen = min(firstSeen ?? wall, wall)
            lastSeen = max(lastSeen ?? wall, wall)
        }
    }

    /// Whether a stall of `nanos` starting at `start` would be the longest: longer than the
    /// longest so far, or as long and earlier (of the very same length and start, the one seen
    /// first stays).
    private func isLonger(_ nanos: UInt64, _ start: UInt64) -> Bool {
        guard let best = longest else { return true }
        return nanos > best.nanos || (nanos == best.nanos && start < best.start)
    }

    /// Adds the stalls `later` added up, from traces after these (so of equally long stalls,
    /// this one's stays the longest, as adding them one by one would keep it).
    mutating func merge(_ later: SignatureTally) {
        count += later.count
        totalNanos += later.totalNanos
        if let theirs = later.longest, isLonger(theirs.nanos, theirs.start) { longest = theirs }
        for index in tiers.indices { tiers[index] += later.tiers[index] }
        for index in categoryNanos.indices { categoryNanos[index] += later.categoryNanos[index] }
        reasons.add(later.reasons)
        sites.add(later.sites)
        executors.add(later.executors)
        mainLoopStalls += later.mainLoopStalls
        waits.merge(later.waits)
        durations += later.durations
        var rest = later.traceStalls[...]
        if let last = traceStalls.indices.last, let first = rest.first, traceStalls[last].trace == first.trace {
            traceStalls[last].stalls += first.stalls
            rest = rest.dropFirst()
        }
        traceStalls += rest
        firstSeen = [firstSeen, later.firstSeen].compactMap { $0 }.min()
        lastSeen = [lastSeen, later.lastSeen].compactMap { $0 }.max()
        saving.add(later.saving)
    }

    /// The signature `key` these stalls make; `origins` names each trace's build and host,
    /// `traceCount` is the traces read (for the share of traces affected).
    func signature(_ key: SignatureKey, origins: TraceOrigins, traceCount: Int) -> StallReport.Signature {
        let longest = longest!.stall
        let categoryTotal = categoryNanos.reduce(0, +)
        let siteList = sites.dictionary.map {
            StallReport.SiteCount(site: "\($0.key.file):\($0.key.line)", count: $0.value)
        }
        .sorted { ($1.count, $0.site) < ($0.count, $1.site) }
        let reason = reasons.dictionary.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key ?? ""
        var tiers: [Tier: Int] = [:]
        for (index, tier) in Tier.allCases.enumerated() where self.tiers[index] > 0 { tiers[tier] = self.tiers[index] }
        let namer = longest.names.namer
        let stack = longest.representativeFrames.map { ReportBuilder.stackFrame($0, names: namer) }
        var signature = StallReport.Signature(
            category: key.category, frames: key.frames, count: count, totalMs: ms(totalNanos),
            maxMs: ms(longest.durationNanos), tiers: tiers,
            categoryShares: Dictionary(
                uniqueKeysWithValues: StallCategory.allCases.enumerated().map {
                    ($0.element, categoryTotal == 0 ? 0 : round(categoryNanos[$0.offset] / categoryTotal, 4))
                }),
            reason: reason, site: siteList.first?.site ?? "", sites: siteList, stack: stack,
            stackConfidence: longest.confidence,
            example: StallReport.StallReference(trace: longest.tracePath, stall: longest.id))
        let waits = waits.top(limit: 3)
        signature.waits = waits.isEmpty ? nil : waits
        if !executors.dictionary.isEmpty {
            var counts = executors.dictionary.map { StallReport.ExecutorCount(executor: $0.key, count: $0.value) }
            if mainLoopStalls > 0 { counts.append(.init(executor: ExecutorName.mainLoop, count: mainLoopStalls)) }
            signature.executors = counts.sorted { ($1.count, $0.executor) < ($0.count, $1.executor) }
        }
        signature.traces = traceStalls.count
        let total = max(traceCount, traceStalls.count)
        signature.tracesPercent = total == 0 ? 0 : round(Double(traceStalls.count) / Double(total) * 100, 2)
        let sorted = durations.sorted()
        signature.p50Ms = ms(nearestRank(sorted, 0.50))
        signature.p95Ms = ms(nearestRank(sorted, 0.95))
        signature.firstSeen = firstSeen.map(isoTime)
        signature.lastSeen = lastSeen.map(isoTime)
        signature.builds = list(origins.build, names: origins.names)
        signature.hosts = list(origins.host, names: origins.names)
        return signature
    }

    /// Stalls and traces per group (`group[trace]` numbers a trace's group in `names`), most
    /// stalls first (then name).
    private func list(_ group: [Int], names: [String]) -> [StallReport.GroupCount] {
        var groups = [Group](repeating: Group(), count: names.count)
        for index in traceStalls.indices {
            let number = group[traceStalls[index].trace]
            groups[number].stalls += traceStalls[index].stalls
            groups[number].traces += 1
        }
        return groups.indices.filter { groups[$0].traces > 0 }.map {
            StallReport.GroupCount(name: names[$0], stalls: groups[$0].stalls, traces: groups[$0].traces)
        }
        .sorted { ($1.stalls, $0.name) < ($0.stalls, $1.name) }
    }
}

/// Every signature's tally over some traces, added a trace at a time in order.
struct SignatureTallies: Sendable {
    var byKey = TallyTable<SignatureKey, SignatureTally>()

    /// Adds `stalls`, the stalls of trace number `trace` (with `facts` and frame clock
    /// `clock`, none by default), after every trace added so far.
    mutating func add(
        _ stalls: [StallFigures], trace: Int, facts: TraceFacts?, clock: [TraceRecord.FrameClock] = []
    ) {
        let dropped = Saving.droppedFrames(stalls, clock: clock)
        for index in stalls.indices {
            let key = stalls[index].key
            byKey.values[byKey.slot(key) { SignatureTally() }].add(
                stalls, at: index, trace: trace, key: key, facts: facts, dropped: dropped[index])
        }
    }

    /// What `key`'s stalls cost the run; nil when none had it.
    func saving(of key: SignatureKey) -> Saving? {
        byKey.keys.firstIndex(of: key).map { byKey.values[$0].saving }
    }

    /// Adds what `later` added up, from traces after these.
    mutating func merge(_ later: SignatureTallies) {
        for index in later.byKey.keys.indices {
            byKey.values[byKey.slot(later.byKey.keys[index]) { SignatureTally() }].merge(later.byKey.values[index])
        }
    }

    /// The signatures, largest total time first (then count, then key), made on up to
    /// `workers` threads (sorting each one's durations is most of it).
    func signatures(origins: TraceOrigins, traceCount: Int, workers: Int = 1) -> [StallReport.Signature] {
        let made = Locked([StallReport.Signature?](repeating: nil, count: byKey.keys.count))
        TraceLoader.forEachIndex(byKey.keys.count, workers: workers) { index in
            let signature = byKey.values[index].signature(byKey.keys[index], origins: origins, traceCount: traceCount)
            made.withLock { $0[index] = signature }
        }
        var result = made.withLock { storage in
            storage.indices.map { (key: byKey.keys[$0], total: byKey.values[$0].totalNanos, signature: storage[$0]!) }
        }
        result.sort {
            ($0.total, $0.signature.count) != ($1.total, $1.signature.count)
                ? ($0.total, $0.signature.count) > ($1.total, $1.signature.count) : $0.key < $1.key
        }
        return result.map(\.signature)
    }
}

/// Each trace's build and host as indices into one list of names (`unknown` for a trace that
/// does not say), so stalls are grouped by them without hashing strings.
struct TraceOrigins {
    var build: [Int]
    var host: [Int]
    var names = ["unknown"]
    private var index = ["unknown": 0]

    /// `count` traces of unknown build and host.
    init(count: Int) {
        build = [Int](repeating: 0, count: count)
        host = [Int](repeating: 0, count: count)
    }

    /// Trace `trace` has `facts`.
    mutating func set(_ trace: Int, _ facts: TraceFacts) {
        set(trace, build: facts.build, host: facts.host)
    }

    /// Trace `trace` is of build `build` (`TraceFacts.build`) and host `host`.
    mutating func set(_ trace: Int, build: String, host: String?) {
        self.build[trace] = number(build)
        self.host[trace] = number(host ?? "unknown")
    }

    private mutating func number(_ name: String) -> Int {
        if let known = index[name] { return known }
        index[name] = names.count
        names.append(name)
        return names.count - 1
    }
}
