import StallwatchCore

/// One stall as `stallwatch show --stall N --json` prints it (schema: docs/cli.md): its
/// callout, breakdown, signature, representative stack with confidence, and every sample with
/// its verdict, weight and frames. Times are milliseconds from the callout's start unless a
/// name says otherwise; absent values are `null`.
///
/// A plain value; use it on any thread.
package struct StallDetail: Sendable, Hashable, Encodable {
    /// One line of `show`'s list (`show T --json` without `--stall`).
    package struct Summary: Sendable, Hashable, Encodable {
        /// The stall's id within its trace.
        package var id: UInt64
        /// Its tier.
        package var tier: Tier
        /// Its duration (until the last sample when unfinished), in milliseconds.
        package var durationMs: Double
        /// Whether it had not ended when the trace stopped.
        package var unfinished: Bool
        /// Its dominant category.
        package var category: StallCategory
        /// Where its work was registered (`#fileID:#line`).
        package var site: String
        /// Its signature's frames, innermost first.
        package var signature: [String]
        /// The share (0…1) of its time the representative stack stands for; 0 without one.
        package var stackConfidence: Double

        /// The summary of `analyzed`.
        package init(_ analyzed: AnalyzedStall) {
            id = analyzed.stall.id
            tier = analyzed.stall.tier
            durationMs = ms(analyzed.durationNanos)
            unfinished = analyzed.stall.flags.contains(.unfinished)
            category = analyzed.category
            site = analyzed.site
            signature = analyzed.key.frames
            stackConfidence = analyzed.representative?.confidence ?? 0
        }
    }

    /// One sample with the classifier's verdict.
    package struct SampleDetail: Sendable, Hashable, Encodable {
        /// When it was taken, in milliseconds from the callout's start.
        package var offsetMs: Double
        /// The thread sampled, 0 when the trace does not say (version 1).
        package var tid: Int32
        /// The time it stands for (`StallAccounting`), in milliseconds.
        package var weightMs: Double
        /// The thread state's name (`running`, `sleeping`, `disk`…).
        package var state: String
        /// The syscall's name, the number as `#N` when unnamed, `null` when not in one.
        @NullWhenAbsent package var syscall: String?
        /// The verdict's category.
        package var category: StallCategory
        /// The verdict's reason.
        package var reason: String
        /// The innermost annotation's label, `null` if none.
        @NullWhenAbsent package var annotation: String?
        /// Whether the signal handler did not answer in time (no stack).
        package var captureTimedOut: Bool
        /// The frames, innermost first.
        package var frames: [StallReport.StackFrame]
    }

    /// The list fields, as in `Summary`.
    package var summary: Summary
    /// The rest of the stall's fields.
    package var detail: Detail

    /// A reason and its fraction of the stall.
    package struct ReasonShare: Sendable, Hashable, Encodable {
        /// Its category.
        package var category: StallCategory
        /// The reason.
        package var reason: String
        /// Its fraction (0…1).
        package var share: Double
    }

    /// What `show --stall N --json` prints besides the summary.
    package struct Detail: Sendable, Hashable, Encodable {
        /// The trace's path, as given.
        package var trace: String
        /// The flags: `unfinished`, `suspended`, `captureTimedOut`.
        package var flags: [String]
        /// The callout's kind, label (`null` if none), mode and phase.
        package var callout: [String: String?]
        /// Why the app expected the work to be long (`expectLong`), `null` if it did not.
        @NullWhenAbsent package var expected: String?
        /// The app's state (`AppState`) when the stall was detected.
        package var appState: [String: String]
        /// The fraction (0…1) of the attributed time per category; every category is present.
        package var categoryShares: [StallCategory: Double]
        /// The reasons, largest first, with their fractions.
        package var reasons: [ReasonShare]
        /// The index (0-based) of the representative stack's sample, `null` without one.
        @NullWhenAbsent package var representativeSample: Int?
        /// The representative stack, innermost first (empty without one).
        package var stack: [StallReport.StackFrame]
        /// Every sample, in time order.
        package var samples: [SampleDetail]
        /// What the loop ran in the seconds before the stall, `null` when the trace does not say.
        @NullWhenAbsent package var leadUp: LeadUp?
        /// How many threads each look sampled and how many had the representative stack (a pool
        /// starvation), `null` for a stall of one thread.
        @NullWhenAbsent package var threads: ThreadSpread?

        /// The fields of `analyzed`.
        package init(_ analyzed: AnalyzedStall) {
            let stall = analyzed.stall
            trace = analyzed.tracePath
            var flags: [String] = []
            if stall.flags.contains(.unfinished) { flags.append("unfinished") }
            if stall.flags.contains(.suspended) { flags.append("suspended") }
            if stall.flags.contains(.captureTimedOut) { flags.append("captureTimedOut") }
            self.flags = flags
            expected = stall.expected
            appState = stall.context
            callout = [
                "kind": "\(stall.callout.kind)", "label": stall.callout.label, "mode": stall.callout.mode,
                "phase": "\(stall.callout.phase)",
            ]
            categoryShares = Dictionary(
                uniqueKeysWithValues: StallCategory.allCases.map { ($0, round(analyzed.breakdown.share(of: $0), 4)) })
            reasons = analyzed.breakdown.topReasons.map {
                ReasonShare(category: $0.category, reason: $0.reason, share: round($0.share, 4))
            }
            representativeSample = analyzed.representativeSample
            leadUp = analyzed.leadUp
            threads = ThreadSpread(analyzed)
            stack = analyzed.representativeFrames.map { ReportBuilder.stackFrame($0, names: analyzed.names) }
            samples = stall.samples.enumerated().map { index, sample in
                let verdict = analyzed.classifications[index]
                return SampleDetail(
                    offsetMs: ms(sample.time >= stall.start ? sample.time - stall.start : 0), tid: sample.tid,
                    weightMs: ms(analyzed.sampleWeights[index]), state: sample.state.name,
                    syscall: sample.syscallName ?? sample.syscall.map { "#\($0)" }, category: verdict.category,
                    reason: verdict.reason, annotation: sample.annotation?.label,
                    captureTimedOut: sample.captureTimedOut,
                    frames: sample.frames.map { ReportBuilder.stackFrame($0, names: analyzed.names) })
            }
        }
    }

    /// The detail of `analyzed`.
    package init(_ analyzed: AnalyzedStall) {
        summary = Summary(analyzed)
        detail = Detail(analyzed)
    }

    /// Encodes the summary's keys and the detail's in one object.
    package func encode(to encoder: any Encoder) throws {
        try summary.encode(to: encoder)
        try detail.encode(to: encoder)
    }
}
