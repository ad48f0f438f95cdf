import StallwatchAnalysis
import StallwatchCore

extension StallReport {
    /// Iterations that overran the frame budget through many short callouts, none of them a
    /// stall: how many, how far over, and the call sites whose callouts took their time.
    package struct CongestionStats: Sendable, Hashable, Codable {
        /// Congested iterations, as the loop counted them (`congestion` records).
        package var iterations: UInt64
        /// How many of them the traces describe one by one (`congestedIteration` records;
        /// traces from before that record have counts only).
        package var described: Int
        /// Their time beyond the budget, summed, in milliseconds (of the described ones).
        package var overBudgetMs: Double
        /// Their whole time, summed, in milliseconds (of the described ones).
        package var totalMs: Double
        /// The call sites that took most of the described iterations' time, largest first
        /// (empty unless a trace's recorder kept its callouts: `full` mode, or the flight recorder).
        package var sites: [CongestionSite]
        /// How many distinct sites there were in all.
        package var siteCount: Int
    }

    /// One call site's part in congested iterations.
    package struct CongestionSite: Sendable, Hashable, Codable {
        /// The registration's `#fileID:#line`.
        package var site: String
        /// The registration's kind (`post`, `timer`, `source`, `observer`, `dispatch`).
        package var kind: String
        /// The label given at registration (`""` if none).
        package var label: String
        /// How many congested iterations it ran in.
        package var iterations: Int
        /// How many of its callouts ran in them.
        package var callouts: UInt64
        /// Their summed duration, in milliseconds.
        package var totalMs: Double
        /// Its fraction (0…1) of the described congested iterations' time.
        package var share: Double
    }
}

/// Adds up the congestion of several traces.
enum CongestionAnalysis {
    /// The congestion of traces, added up a trace at a time: `FleetTally` keeps one.
    struct Tally: Sendable {
        struct SiteKey: Hashable {
            var file: String
            var line: UInt32
            var kind: String
            var label: String
        }

        struct SiteTotals {
            var iterations = 0
            var callouts: UInt64 = 0
            var nanos: UInt64 = 0
        }

        var counted: UInt64 = 0
        var described = 0
        var over: UInt64 = 0
        var total: UInt64 = 0
        var sites: [SiteKey: SiteTotals] = [:]

        /// Counts `trace`'s congested iterations.
        mutating func add(_ trace: DecodedTrace) {
            guard !trace.congestion.isEmpty || !trace.congestedIterations.isEmpty else { return }
            let budget = (trace.header?.thresholds.budget ?? TierThresholds.default.budget).nanoseconds
            counted += trace.congestion.reduce(0) { $0 + $1.count }
            for iteration in trace.congestedIterations {
                described += 1
                total += iteration.duration
                over += iteration.duration > budget ? iteration.duration - budget : 0
                for site in iteration.sites {
                    let known = trace.callSites[site.site]
                    let key = SiteKey(
                        file: known?.file ?? "?", line: known?.line ?? 0, kind: known.map { "\($0.kind)" } ?? "post",
                        label: known?.label ?? "")
                    sites[key, default: SiteTotals()].iterations += 1
                    sites[key, default: SiteTotals()].callouts += site.count
                    sites[key, default: SiteTotals()].nanos += site.nanos
                }
            }
        }

        /// Adds what `other` counted.
        mutating func merge(_ other: Tally) {
            counted += other.counted
            described += other.described
            over += other.over
            total += other.total
            for (key, site) in other.sites {
                sites[key, default: SiteTotals()].iterations += site.iterations
                sites[key, default: SiteTotals()].callouts += site.callouts
                sites[key, default: SiteTotals()].nanos += site.nanos
            }
        }

        /// The congestion counted, listing the `top` largest sites; `nil` when there was none.
        func stats(top: Int = 5) -> StallReport.CongestionStats? {
            guard counted > 0 || described > 0 else { return nil }
            let ranked = sites.sorted {
                ($0.value.nanos, $1.key.file, $1.key.line) > ($1.value.nanos, $0.key.file, $0.key.line)
            }
            return StallReport.CongestionStats(
                iterations: max(counted, UInt64(described)), described: described, overBudgetMs: ms(over),
                totalMs: ms(total),
                sites: ranked.prefix(max(0, top)).map {
                    StallReport.CongestionSite(
                        site: "\($0.key.file):\($0.key.line)", kind: $0.key.kind, label: $0.key.label,
                        iterations: $0.value.iterations, callouts: $0.value.callouts, totalMs: ms($0.value.nanos),
                        share: total == 0 ? 0 : round(Double($0.value.nanos) / Double(total), 4))
                }, siteCount: sites.count)
        }
    }
}
