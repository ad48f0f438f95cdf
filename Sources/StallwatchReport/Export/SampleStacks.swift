import StallwatchCore

/// A sample's stack, outermost frame first, with the sample's category as the root frame,
/// each frame named by the stall's `FrameNamer`. A sample without a backtrace gets a
/// placeholder leaf so its time still shows.
func rootedStack(_ sample: Sample, category: StallCategory, names: FrameNamer = FrameNamer(modules: [])) -> [String] {
    [category.rawValue]
        + (sample.frames.isEmpty ? [missingStackName(sample)] : sample.frames.reversed().map(names.name))
}

/// The placeholder frame of a sample without a backtrace.
func missingStackName(_ sample: Sample) -> String {
    sample.captureTimedOut ? "[capture timed out]" : "[no stack]"
}

/// The nanoseconds each sample of `stall` stands for: `StallAccounting`'s rule, the one the
/// report's totals and breakdowns follow (`AnalyzedStall.sampleWeights` holds the same).
func sampleWeights(_ stall: Stall) -> [UInt64] {
    StallAccounting.sampleWeights(stall)
}
