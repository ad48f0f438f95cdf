import StallwatchCore

/// The nanoseconds each sample of `stall` stands for, exactly as its breakdown weighs them.
func sampleWeights(_ stall: Stall) -> [UInt64] {
    StallBreakdown.sampleWeights(stall.samples, end: stall.end)
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
