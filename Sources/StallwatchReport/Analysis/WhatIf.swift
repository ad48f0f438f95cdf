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

/// What one signature's stalls cost the run, added up a stall at a time with the rest of the
/// signature's tally (`SignatureTally.saving`): their overrun, hang time and the frames they
/// dropped.
///
/// The frame clock records intervals (delivered and dropped frames per interval), not single
/// frames, so a stall's dropped frames are estimated: each frame period of the stall inside an
/// interval claims one of that interval's dropped frames, and when the stalls in an interval
/// claim more frames than it dropped, each gets its share of what it did drop. So the frames
/// given back never exceed the frames dropped. Frames are counted in thousandths, integers, so
/// the totals do not depend on the order traces are added in.
struct Saving: Sendable {
    var overrunNanos: UInt64 = 0
    var hangNanos: UInt64 = 0
    var droppedMilliframes: UInt64 = 0

    /// Adds a stall of `overrun`, hang time `hang` (0 below the hang tier) that dropped
    /// `dropped` frames (`droppedFrames(_:clock:)`).
    mutating func add(overrun: UInt64, hang: UInt64, dropped: Double) {
        overrunNanos += overrun
        hangNanos += hang
        droppedMilliframes += UInt64((dropped * 1000).rounded())
    }

    /// Adds what `other` added up.
    mutating func add(_ other: Saving) {
        overrunNanos += other.overrunNanos
        hangNanos += other.hangNanos
        droppedMilliframes += other.droppedMilliframes
    }

    /// The frames each of `stalls` dropped, by the estimate above.
    static func droppedFrames(_ stalls: [StallFigures], clock: [TraceRecord.FrameClock]) -> [Double] {
        var result = [Double](repeating: 0, count: stalls.count)
        let expected = clock.reduce(UInt64(0)) { $0 + $1.expected }
        let length = clock.reduce(UInt64(0)) { $0 + $1.intervalLength }
        guard expected > 0, length > 0, !stalls.isEmpty, clock.contains(where: { $0.dropped > 0 }) else {
            return result
        }
        let period = Double(length) / Double(expected)
        // Every (interval, stall, frames) claim on an interval that dropped frames (the others
        // give none back) in one array, in stall order, and what each interval's claims add up
        // to (summed in that same order).
        var claims: [(interval: Int, stall: Int, frames: Double)] = []
        claims.reserveCapacity(stalls.count * 2)
        var claimed = [Double](repeating: 0, count: clock.count)
        for index in stalls.indices {
            let start = stalls[index].start
            let end = start &+ stalls[index].durationNanos
            // The intervals that may overlap (the recorder writes them in time order): from the
            // last one starting at or before `start`.
            var interval = max(0, clock.partitioningIndex { $0.intervalStart > start } - 1)
            while interval < clock.count, clock[interval].intervalStart < end {
                let from = max(start, clock[interval].intervalStart)
                let to = min(end, clock[interval].intervalStart &+ clock[interval].intervalLength)
                if to > from && clock[interval].dropped > 0 {
                    let frames = Double(to - from) / period
                    claims.append((interval, index, frames))
                    claimed[interval] += frames
                }
                interval += 1
            }
        }
        // Each stall's claims come in interval order, so its frames add up in that order.
        for claim in claims where claimed[claim.interval] > 0 {
            let scale = min(1, Double(clock[claim.interval].dropped) / claimed[claim.interval])
            result[claim.stall] += claim.frames * scale
        }
        return result
    }

    /// The run's figures without these stalls: `rates` and `frames` are the run's own.
    func ifFixed(rates: RunRates, frames: FrameTotals) -> StallReport.IfFixed {
        var without = rates
        without.overrunNanos -= min(without.overrunNanos, overrunNanos)
        without.hangNanos -= min(without.hangNanos, hangNanos)
        var ifFixed = StallReport.IfFixed(
            hitchRatioMsPerSecond: without.hitchRatioMsPerSecond,
            hitchGrade: HitchGrade(msPerSecond: without.hitchRatioMsPerSecond),
            hangRateSecondsPerHour: without.hangRateSecondsPerHour)
        if frames.records > 0 {
            let given = min(frames.dropped, (droppedMilliframes + 500) / 1000)
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
        tally.includeExpected = includeExpected
        tally.groupBy = groupBy
        return tally
    }
}
