import CStallwatchShims

/// A callout in progress on the loop thread, kept so a nested run can hand the board back to
/// the outer callout when it returns.
struct CalloutFrame {
    var site: CalloutSite
    var phase: LoopActivity
    var mode: MainLoop.Mode
}

extension MainLoop {
    /// Runs one piece of work. Unwatched, this is a relaxed load and a branch; watched, it
    /// publishes the callout on the board (atomic stores and one clock read, no lock,
    /// allocation or syscall).
    @inline(__always)
    func callout(_ site: CalloutSite, phase: LoopActivity, mode: Mode, _ body: () -> Void) {
        if board.enabled.load(ordering: .relaxed) {
            watchedCallout(site, phase: phase, mode: mode, body)
        } else {
            body()
        }
    }

    @inline(never)
    func watchedCallout(_ site: CalloutSite, phase: LoopActivity, mode: Mode, _ body: () -> Void) {
        let frame = CalloutFrame(site: site, phase: phase, mode: mode)
        publishBegin(frame, at: sw_monotonic_ns())
        calloutStack.append(frame)
        body()
        calloutStack.removeLast()
        publishEnd()
    }

    func publishBegin(_ frame: CalloutFrame, at start: UInt64) {
        calloutSequence &+= 1
        if iterationStart == 0 { iterationStart = start }
        board.startNanos.store(start, ordering: .relaxed)
        let descriptor =
            UInt64(frame.site.kind.rawValue) | UInt64(frame.phase.rawValue) << 8 | UInt64(frame.mode.id)
            << 16
            | UInt64(frame.site.line) << 32
        board.descriptor.store(descriptor, ordering: .relaxed)
        board.label.store(CalloutSite.pack(frame.site.label), ordering: .relaxed)
        board.file.store(CalloutSite.pack(frame.site.file), ordering: .relaxed)
        board.sequence.store(calloutSequence, ordering: .releasing)
    }

    func publishEnd() {
        let finished = calloutSequence
        calloutSequence &+= 1
        if board.stalledSequence.load(ordering: .acquiring) == finished {
            // The watchdog is timing this one: give it the exact end before moving on, then
            // wake it so the stall closes now rather than at its next sample.
            board.stallEndNanos.store(sw_monotonic_ns(), ordering: .relaxed)
            board.stallEndSequence.store(finished, ordering: .releasing)
            board.sequence.store(calloutSequence, ordering: .releasing)
            board.watchdogWake.signal()
            iterationHadStall = true
            return
        }
        board.sequence.store(calloutSequence, ordering: .releasing)
    }

    /// A run is starting inside a callout: the outer callout stops counting (the inner loop is
    /// what can stall now).
    func suspendOuterCallout() {
        if !calloutStack.isEmpty && calloutSequence & 1 == 1 { publishEnd() }
    }

    /// A nested run returned: the outer callout is running again, from now.
    func resumeOuterCallout() {
        if let outer = calloutStack.last, calloutSequence & 1 == 0 {
            publishBegin(outer, at: sw_monotonic_ns())
        }
    }

    /// Iteration bookkeeping for congestion: called where an iteration ends (before the wait).
    func finishIteration() {
        guard iterationStart != 0 else { return }
        let budget = board.budgetNanos.load(ordering: .relaxed)
        if !iterationHadStall && sw_monotonic_ns() &- iterationStart > budget {
            board.congestedIterations.add(1, ordering: .relaxed)
        }
        iterationStart = 0
        iterationHadStall = false
    }
}
