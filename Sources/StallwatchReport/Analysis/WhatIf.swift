import StallwatchCore

// What fixing a signature would buy: the run's hitch ratio, dropped frames and FPS without
// that signature's stalls (`StallReport.Signature.ifFixed`), and a report made as if some
// signatures' stalls had not happened (`gate --what-if`).

extension StallReport {
    /// The run's figures without one signature's stalls.
    package struct IfFixed: Sendable, Hashable, Codable {
        /// The hitch ratio without the signature's overrun, in ms per second of run time.
        package var hitchRatioMsPerSecond: Double
        /// That ratio's grade.
        package var hitchGrade: HitchGrade
        /// The hang rate without the signature's hangs, in seconds per hour of run time.
        package var hangRateSecondsPerHour: Double
        /// The frames dropped without the frames the signature's stalls dropped; nil when no
        /// frame clock ran.
        package var droppedFrames: UInt64?
        /// Delivered frames per second with those frames delivered; nil when no frame clock ran.
        package var fps: Double?
    }
}

/// What each signature's stalls cost the run, added up a trace at a time: their overrun, hang
/// time and the frames they dropped.
///
/// The frame clock records intervals (delivered and dropped frames per interval), not single
/// frames, so a stall's dropped frames are estimated: each frame period of the stall inside an
/// interval claims one of that interval's dropped frames, and when the stalls in an interval
/// claim more frames than it dropped, each gets its share of what it did drop. So the frames
/// given back never exceed the frames dropped. Frames are counted in thousandths, integers, so
/// the totals do not depend on the order traces are added in.
struct SavingsTally: Sendable {
    struct Saving: Sendable {
        var overrunNanos: UInt64 = 0
        var hangNanos: UInt64 = 0
        var droppedMilliframes: UInt64 = 0
    }

    var bySignature: [SignatureKey: Saving] = [:]

    /// Adds a trace's `stalls` with the frame clock `clock` it recorded.
    mutating func add(_ stalls: [StallFigures], clock: [TraceRecord.FrameClock]) {
        let dropped = Self.droppedFrames(stalls, clock: clock)
        for index in stalls.indices {
            var saving = bySignature[stalls[index].key] ?? Saving()
            saving.overrunNanos += stalls[index].overrunNanos
            if stalls[index].tier >= .hang { saving.hangNanos += stalls[index].durationNanos }
            saving.droppedMilliframes += UInt64((dropped[index] * 1000).rounded())
            bySignature[stalls[index].key] = saving
        }
    }

    /// Adds what `other` added up.
    mutating func merge(_ other: SavingsTally) {
        for (key, saving) in other.bySignature {
            bySignature[key, default: Saving()].overrunNanos += saving.overrunNanos
            bySignature[key, default: Saving()].hangNanos += saving.hangNanos
            bySignature[key, default: Saving()].droppedMilliframes += saving.droppedMilliframes
        }
    }

    /// The frames each of `stalls` dropped, by the estimate above.
    static func droppedFrames(_ stalls: [StallFigures], clock: [TraceRecord.FrameClock]) -> [Double] {
        var result = [Double](repeating: 0, count: stalls.count)
        let expected = clock.reduce(UInt64(0)) { $0 + $1.expected }
        let length = clock.reduce(UInt64(0)) { $0 + $1.intervalLength }
        guard expected > 0, length > 0, !stalls.isEmpty else { return result }
        let period = Double(length) / Double(expected)
        // Each interval's claims: (stall, frames) pairs, and their sum.
        var claims: [[(stall: Int, frames: Double)]] = Array(repeating: [], count: clock.count)
        for index in stalls.indices {
            let start = stalls[index].start
            let end = start &+ stalls[index].durationNanos
            // The intervals that may overlap (the recorder writes them in time order): from the
            // last one starting at or before `start`.
            var interval = max(0, clock.partitioningIndex { $0.intervalStart > start } - 1)
            while interval < clock.count, clock[interval].intervalStart < end {
                let from = max(start, clock[interval].intervalStart)
                let to = min(end, clock[interval].intervalStart &+ clock[interval].intervalLength)
                if to > from { claims[interval].append((index, Double(to - from) / period)) }
                interval += 1
            }
        }
        for interval in clock.indices where clock[interval].dropped > 0 {
            let claimed = claims[interval].reduce(0) { $0 + $1.frames }
            guard claimed > 0 else { continue }
            let scale = min(1, Double(clock[interval].dropped) / claimed)
            for claim in claims[interval] { result[claim.stall] += claim.frames * scale }
        }
        return result
    }

    /// The run's figures without `signature`'s stalls: `rates` and `frames` are the run's own.
    func ifFixed(_ signature: StallReport.Signature, rates: RunRates, frames: FrameTotals) -> StallReport.IfFixed? {
        guard let saving = bySignature[SignatureKey(category: signature.category, frames: signature.frames)] else {
            return nil
        }
        var without = rates
        without.overrunNanos -= min(without.overrunNanos, saving.overrunNanos)
        without.hangNanos -= min(without.hangNanos, saving.hangNanos)
        var ifFixed = StallReport.IfFixed(
            hitchRatioMsPerSecond: without.hitchRatioMsPerSecond,
            hitchGrade: HitchGrade(msPerSecond: without.hitchRatioMsPerSecond),
            hangRateSecondsPerHour: without.hangRateSecondsPerHour)
        if frames.records > 0 {
            let given = min(frames.dropped, (saving.droppedMilliframes + 500) / 1000)
            ifFixed.droppedFrames = frames.dropped - given
            let seconds = Double(frames.intervalNanos) / 1e9
            ifFixed.fps = seconds == 0 ? 0 : round(Double(frames.delivered + given) / seconds, 2)
        }
        return ifFixed
    }
}

extension ReportBuilder {
    /// An empty tally that leaves out the stalls of `leavingOut`.
    func newTally() -> FleetTally {
        var tally = FleetTally()
        tally.leftOut = Dictionary(uniqueKeysWithValues: leavingOut.map { ($0, 0) })
        return tally
    }
}
