import StallwatchCore

/// The trace writer's flight recorder: the callouts of the last `length` nanoseconds, at most
/// `capacity` of them, in a ring that overwrites its oldest. When a stall begins, `leadUp`
/// sums what ran in the window before it into a `stallLeadUp` record. Writer thread only.
///
/// Memory: `capacity` entries of 24 bytes, allocated as the window fills (1.5 MiB at the
/// default 65,536), plus the loop's event ring the callouts arrive through.
struct FlightWindow {
    struct Entry {
        var site: UInt64
        var start: UInt64
        var duration: UInt64

        var end: UInt64 { start &+ duration }
    }

    /// How far back the window reaches, in nanoseconds.
    let length: UInt64
    let capacity: Int
    private var entries: [Entry] = []
    /// Where the oldest entry is, once the ring has wrapped.
    private var oldest = 0
    /// Events the loop's ring dropped, as the writer saw its counter grow: (when, the total
    /// then). Marks older than the window are folded into `lostBefore`.
    private var lossMarks: [(time: UInt64, total: UInt64)] = []
    private var lostBefore: UInt64 = 0
    /// The latest end of an entry the ring overwrote: the window holds every callout that
    /// ended after it, and none before, so it never reaches further back.
    private var overwrittenUntil: UInt64 = 0

    /// The most callouts a window keeps.
    static let defaultCapacity = 1 << 16

    init(length: UInt64, capacity: Int = FlightWindow.defaultCapacity) {
        require(capacity > 0, "FlightWindow capacity must be positive, got \(capacity)")
        self.length = length
        self.capacity = capacity
    }

    /// Takes in one callout that ended (callouts arrive in the order they ended).
    mutating func add(site: UInt64, start: UInt64, duration: UInt64) {
        let entry = Entry(site: site, start: start, duration: duration)
        if entries.count < capacity {
            entries.append(entry)
        } else {
            overwrittenUntil = max(overwrittenUntil, entries[oldest].end)
            entries[oldest] = entry
            oldest = (oldest + 1) % capacity
        }
    }

    /// The ring's dropped-event counter read `total` at `time`.
    mutating func sawLost(total: UInt64, at time: UInt64) {
        if total > (lossMarks.last?.total ?? lostBefore) { lossMarks.append((time, total)) }
        while let first = lossMarks.first, first.time &+ length < time {
            lostBefore = first.total
            lossMarks.removeFirst()
        }
    }

    /// What ran in the window before `start` (a stall's), as the record of stall `id`:
    /// callouts that ended in `[start - length, start]`. `since` (when the recording began)
    /// shortens the window when it began later, and so does the ring: more than `capacity`
    /// callouts in the window, and it reaches back only to the end of the last one it dropped
    /// (the record's `window` says how far it really reaches).
    func leadUp(id: UInt64, before start: UInt64, since: UInt64) -> TraceRecord.StallLeadUp {
        let from = max(start > length ? start - length : 0, since, overwrittenUntil)
        var callouts: UInt64 = 0
        var busy: UInt64 = 0
        var bySite: [UInt64: (count: UInt64, nanos: UInt64)] = [:]
        var recent: [TraceRecord.StallLeadUp.Recent] = []
        // Newest first; the stalled callout itself (and anything after it) ends past `start`.
        for offset in stride(from: entries.count - 1, through: 0, by: -1) {
            let entry = entries[(oldest + offset) % entries.count]
            if entry.end > start { continue }
            if entry.end < from { break }
            callouts += 1
            busy &+= entry.duration
            let known = bySite[entry.site]
            bySite[entry.site] = ((known?.count ?? 0) + 1, (known?.nanos ?? 0) &+ entry.duration)
            if recent.count < TraceRecord.StallLeadUp.maxRecent {
                recent.append(.init(site: entry.site, before: start &- entry.start, duration: entry.duration))
            }
        }
        let sites = bySite.map {
            TraceRecord.CongestedIteration.SiteTime(site: $0.key, count: $0.value.count, nanos: $0.value.nanos)
        }
        .sorted { ($0.nanos, $1.site) > ($1.nanos, $0.site) }
        .prefix(TraceRecord.StallLeadUp.maxSites)
        let lostSince = lossMarks.last { $0.time < from }?.total ?? lostBefore
        let lost = (lossMarks.last?.total ?? lostBefore) - lostSince
        return TraceRecord.StallLeadUp(
            id: id, window: start - min(from, start), callouts: callouts, busy: busy, lost: lost,
            sites: Array(sites), recent: recent.reversed())
    }
}
