import StallwatchCore

/// What the loop ran in the seconds before a stall, as its trace's flight recorder kept it
/// (`stallLeadUp` record), with the call sites named: `show --stall N` and its JSON.
///
/// A plain value; use it on any thread.
package struct LeadUp: Sendable, Hashable, Encodable {
    /// A call site's part of the window.
    package struct Site: Sendable, Hashable, Encodable {
        /// The registration's kind (`post`, `timer`, `source`, `observer`, `dispatch`).
        package var kind: String
        /// The label given at registration (`""` if none).
        package var label: String
        /// The registration's `#fileID:#line`.
        package var site: String
        /// How many of its callouts ended in the window.
        package var callouts: UInt64
        /// Their summed duration, in milliseconds.
        package var totalMs: Double
        /// Its fraction (0…1) of the window.
        package var share: Double
    }

    /// One of the last callouts before the stall.
    package struct Callout: Sendable, Hashable, Encodable {
        /// The registration's kind.
        package var kind: String
        /// The label given at registration (`""` if none).
        package var label: String
        /// The registration's `#fileID:#line`.
        package var site: String
        /// How long before the stall's start it started, in milliseconds.
        package var beforeMs: Double
        /// How long it ran, in milliseconds.
        package var durationMs: Double
    }

    /// How far back the window reaches, in milliseconds.
    package var windowMs: Double
    /// How many callouts ended in it.
    package var callouts: UInt64
    /// Their summed duration, in milliseconds: the loop's busy time.
    package var busyMs: Double
    /// The busy time's fraction (0…1) of the window.
    package var busyShare: Double
    /// Callout events the recorder dropped while it kept the window (0: the window is whole).
    package var lostEvents: UInt64
    /// The sites that took most of the window, largest first.
    package var sites: [Site]
    /// The last callouts before the stall, oldest first.
    package var recent: [Callout]

    /// The lead-up `record` gives, its sites named from `callSites` (an unknown id is a `post`
    /// at `?:0`, as the decoder names it elsewhere).
    package init(_ record: TraceRecord.StallLeadUp, callSites: [UInt64: TraceRecord.CallSite]) {
        func named(_ id: UInt64) -> (kind: String, label: String, site: String) {
            guard let site = callSites[id] else { return ("post", "", "?:0") }
            return ("\(site.kind)", site.label ?? "", "\(site.file):\(site.line)")
        }
        let window = Double(record.window)
        windowMs = ms(record.window)
        callouts = record.callouts
        busyMs = ms(record.busy)
        busyShare = window > 0 ? round(min(Double(record.busy) / window, 1), 4) : 0
        lostEvents = record.lost
        sites = record.sites.map { time in
            let name = named(time.site)
            return Site(
                kind: name.kind, label: name.label, site: name.site, callouts: time.count, totalMs: ms(time.nanos),
                share: window > 0 ? round(min(Double(time.nanos) / window, 1), 4) : 0)
        }
        recent = record.recent.map { callout in
            let name = named(callout.site)
            return Callout(
                kind: name.kind, label: name.label, site: name.site, beforeMs: ms(callout.before),
                durationMs: ms(callout.duration))
        }
    }
}
