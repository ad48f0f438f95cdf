import StallwatchAnalysis
import StallwatchCore

/// What stalls' samples waited on, as the one-line `WaitFact.summary` texts with the share of
/// samples that carried each. `report` lists a signature's top ones, `show` a stall's.
///
/// Pure; use it on any thread.
package enum WaitSummary {
    /// The most frequent facts over `stalls`' samples, most frequent first, at most `limit`;
    /// each share is of all the samples (with or without a fact).
    package static func top(_ stalls: [Stall], limit: Int = 3) -> [StallReport.WaitCount] {
        var tally = Tally()
        for stall in stalls { tally.add(stall) }
        return tally.top(limit: limit)
    }

    /// The counts `top(_:limit:)` ranks, added up one stall at a time.
    struct Tally {
        var counts: [String: Int] = [:]
        var samples = 0

        mutating func add(_ stall: Stall) {
            add(sampleCount: stall.samples.count, waits: stall.samples.compactMap { $0.wait?.summary })
        }

        /// Adds a stall's `sampleCount` samples, whose wait facts' summaries are `waits`.
        mutating func add(sampleCount: Int, waits: [String]) {
            samples += sampleCount
            for summary in waits { counts[summary, default: 0] += 1 }
        }

        /// Adds what `other` counted.
        mutating func merge(_ other: Tally) {
            counts.merge(other.counts, uniquingKeysWith: +)
            samples += other.samples
        }

        func top(limit: Int) -> [StallReport.WaitCount] {
            guard samples > 0 else { return [] }
            return counts.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(limit).map {
                StallReport.WaitCount(text: $0.key, share: Double($0.value) / Double(samples))
            }
        }
    }
}

extension StallReport {
    /// One thing a signature's samples waited on (`read of /var/lib/app/feed.json`) and the
    /// fraction (0…1) of its samples that say so.
    package struct WaitCount: Sendable, Hashable, Codable {
        /// `WaitFact.summary`.
        package var text: String
        /// The fraction of the samples.
        package var share: Double
    }
}
