import StallwatchCore

/// The time each sample of a stall stands for: until the next sample, the last one until the
/// stall's end (nothing for an unfinished stall), as `StallBreakdown` weighs them.
func sampleWeights(_ stall: Stall) -> [UInt64] {
    stall.samples.indices.map { index in
        let time = stall.samples[index].time
        let until = index + 1 < stall.samples.count ? stall.samples[index + 1].time : (stall.end ?? time)
        return until > time ? until - time : 0
    }
}

/// A sample's stack, outermost frame first, with the sample's category as the root frame.
/// A sample without a backtrace gets a placeholder leaf so its time still shows.
func rootedStack(_ sample: Sample, category: StallCategory) -> [String] {
    [category.rawValue] + (sample.frames.isEmpty ? [missingStackName(sample)] : sample.frames.reversed().map(frameName))
}

/// The placeholder frame of a sample without a backtrace.
func missingStackName(_ sample: Sample) -> String {
    sample.captureTimedOut ? "[capture timed out]" : "[no stack]"
}
