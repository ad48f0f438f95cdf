import StallwatchCore

/// Apple's grade of a hitch time ratio: under 5 ms/s good, 5 to 10 ms/s a warning, over
/// 10 ms/s bad (Xcode Organizer's and MetricKit's bands).
///
/// A plain value; use it on any thread.
package enum HitchGrade: String, Sendable, Hashable, Codable, CaseIterable {
    /// Under 5 ms of hitch time per second: users do not notice.
    case good
    /// 5 to 10 ms per second: users notice now and then.
    case warning
    /// Over 10 ms per second: scrolling and animation feel broken.
    case bad

    /// The grade of a hitch ratio in ms per second.
    package init(msPerSecond ratio: Double) {
        self = ratio < 5 ? .good : ratio <= 10 ? .warning : .bad
    }

    /// The band as shown next to the ratio: `good: under 5 ms/s`.
    package var band: String {
        switch self {
        case .good: "good: under 5 ms/s"
        case .warning: "warning: 5 to 10 ms/s"
        case .bad: "bad: over 10 ms/s"
        }
    }
}

/// The two rates a report gives of run time: hang time per hour and hitch time per second.
/// Hang time is the whole duration of every stall of tier `hang` or `severe` (at least 250 ms
/// by default, `TierThresholds.hang`, Apple's hang); the run time is the one the hitch ratio
/// divides by (`ReportBuilder.runTime(of:)`, summed over traces).
///
/// Integers, so they add up the same in any order. A plain value; any thread.
package struct RunRates: Sendable, Hashable {
    /// Run time, in nanoseconds.
    package var runNanos: UInt64 = 0
    /// The time of the stalls of tier `hang` and above, in nanoseconds.
    package var hangNanos: UInt64 = 0
    /// The stalls' time beyond the budget, in nanoseconds.
    package var overrunNanos: UInt64 = 0

    package init(runNanos: UInt64 = 0, hangNanos: UInt64 = 0, overrunNanos: UInt64 = 0) {
        self.runNanos = runNanos
        self.hangNanos = hangNanos
        self.overrunNanos = overrunNanos
    }

    /// Seconds of hang per hour of run time, to the millisecond; 0 without run time.
    package var hangRateSecondsPerHour: Double {
        runNanos == 0 ? 0 : round(Double(hangNanos) / Double(runNanos) * 3600, 3)
    }

    /// Milliseconds of overrun per second of run time, to the microsecond; 0 without run time.
    package var hitchRatioMsPerSecond: Double {
        runNanos == 0 ? 0 : round(Double(overrunNanos) / 1e6 / (Double(runNanos) / 1e9), 3)
    }

    /// Adds `other`'s times.
    package mutating func add(_ other: RunRates) {
        runNanos += other.runNanos
        hangNanos += other.hangNanos
        overrunNanos += other.overrunNanos
    }
}

extension StallReport {
    /// One build's or host's rates (`rateByBuild`, `rateByHost`).
    package struct GroupRate: Sendable, Hashable, Codable {
        /// The build (`TraceFacts.build`) or host (`unknown` when the traces do not say).
        package var name: String
        /// How many traces it ran.
        package var traces: Int
        /// Their run time, in seconds.
        package var runTimeSeconds: Double
        /// Their hang time, in seconds.
        package var hangSeconds: Double
        /// Seconds of hang per hour of run time.
        package var hangRateSecondsPerHour: Double
        /// Milliseconds of overrun per second of run time.
        package var hitchRatioMsPerSecond: Double
        /// The hitch ratio's grade.
        package var hitchGrade: HitchGrade

        /// The rates of `traces` traces that added up to `rates`.
        package init(name: String, traces: Int, rates: RunRates) {
            self.name = name
            self.traces = traces
            runTimeSeconds = round(Double(rates.runNanos) / 1e9, 6)
            hangSeconds = round(Double(rates.hangNanos) / 1e9, 6)
            hangRateSecondsPerHour = rates.hangRateSecondsPerHour
            hitchRatioMsPerSecond = rates.hitchRatioMsPerSecond
            hitchGrade = HitchGrade(msPerSecond: hitchRatioMsPerSecond)
        }
    }

    /// Each group's rates, highest hang rate first (then name), from each trace's group and rates.
    static func groupRates(_ traces: [(group: String, rates: RunRates)]) -> [GroupRate] {
        // A fleet has a few groups, mostly found by comparing, not hashing (`TallyTable`).
        var groups = TallyTable<String, (traces: Int, rates: RunRates)>()
        for trace in traces {
            let slot = groups.slot(trace.group) { (0, RunRates()) }
            groups.values[slot].traces += 1
            groups.values[slot].rates.add(trace.rates)
        }
        return groups.keys.indices.map {
            GroupRate(name: groups.keys[$0], traces: groups.values[$0].traces, rates: groups.values[$0].rates)
        }
        .sorted { ($1.hangRateSecondsPerHour, $0.name) < ($0.hangRateSecondsPerHour, $1.name) }
    }
}

extension RunRates {
    /// The rates of a trace that ran `runNanos` with stalls of these tiers, durations and
    /// overruns.
    init(runNanos: UInt64, stalls: some Sequence<(tier: Tier, durationNanos: UInt64, overrunNanos: UInt64)>) {
        self.init(runNanos: runNanos)
        for stall in stalls {
            overrunNanos += stall.overrunNanos
            if stall.tier >= .hang { hangNanos += stall.durationNanos }
        }
    }

    /// The rates of a trace that ran `runNanos` with `stalls`.
    init(stalls: [StallFigures], runNanos: UInt64) {
        self.init(runNanos: runNanos, stalls: stalls.lazy.map { ($0.tier, $0.durationNanos, $0.overrunNanos) })
    }

    /// The rates of `trace` with its analyzed `stalls` (what the exports give per trace).
    init(_ trace: LoadedTrace, stalls: [AnalyzedStall]) {
        self.init(
            runNanos: ReportBuilder.runTime(of: trace),
            stalls: stalls.lazy.map { ($0.stall.tier, $0.durationNanos, $0.overrunNanos) })
    }
}
