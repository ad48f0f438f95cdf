import CStallwatchShims
import StallwatchCore

/// The loop thread's callout bookkeeping. It lives behind a pointer owned by the loop so the
/// per-callout path pays no dynamic exclusivity checks (the loop thread is its only user).
struct CalloutState {
    /// Mirrors `board.sequence`: odd while a watched callout runs.
    var sequence: UInt64 = 0
    /// Cycle stamp of the iteration's first watched callout (0: none yet).
    var iterationStart: UInt64 = 0
    var iterationHadStall = false
    /// The trace recorder's ring, when one records this loop (set on the loop thread).
    var ring: EventRing?
    /// Whether every callout goes to the ring (`full` mode) or only iterations.
    var recordCallouts = false
}

/// A callout's identity as the board publishes it: its descriptor and its packed label and
/// file (`CalloutSite.pack`). Also what a nested run saves of the callout it suspends.
struct PublishedCallout {
    var descriptor: CalloutDescriptor
    var label: UInt64
    var file: UInt64
}

extension MainLoop {
    /// Runs one piece of work. Unwatched, this is a relaxed load and a branch; watched, it
    /// publishes the callout on the board (a TSC read and atomic stores: no lock, allocation
    /// or syscall).
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
        let descriptor = CalloutDescriptor(kind: site.kind, phase: phase, mode: mode, line: site.line)
        let callout = PublishedCallout(
            descriptor: descriptor, label: CalloutSite.pack(site.label), file: CalloutSite.pack(site.file))
        let start = sw_cycles()
        publishBegin(callout, at: start)
        body()
        let end = sw_cycles()
        publishEnd(end: end)
        if calloutState.pointee.recordCallouts, let ring = calloutState.pointee.ring {
            ring.push(
                EventRing.Event(
                    descriptor: descriptor, label: callout.label, file: callout.file, start: start, end: end))
        }
    }

    @inline(__always)
    func publishBegin(_ callout: PublishedCallout, at start: UInt64) {
        let state = calloutState
        state.pointee.sequence &+= 1
        if state.pointee.iterationStart == 0 { state.pointee.iterationStart = start }
        board.publish(startCycles: start, callout)
        board.publish(sequence: state.pointee.sequence)
    }

    /// The running callout ended at `end` (`sw_cycles()`). The loop judges every callout by its
    /// own two stamps, so a stall is caught whenever the watchdog runs. The start is the one
    /// published (a callout resumed after a nested run counts from its resumption).
    @inline(__always)
    func publishEnd(end: UInt64) {
        let state = calloutState
        let start = board.publishedStartCycles
        let finished = state.pointee.sequence
        state.pointee.sequence &+= 1
        if end &- start > board.budgetCycles.load(ordering: .relaxed) || board.stalledSequence == finished {
            calloutOverran(finished, start: start, end: end)
        } else {
            board.publish(sequence: state.pointee.sequence)
        }
    }

    /// A callout overran (or the watchdog is timing it): log it with its exact end and the
    /// identity still on the board before moving on (the watchdog reads the sequence, then the
    /// log), then wake the watchdog so the stall closes now rather than at its next sample.
    @inline(never)
    func calloutOverran(_ finished: UInt64, start: UInt64, end: UInt64) {
        board.overruns.append(
            OverrunLog.Entry(sequence: finished, startCycles: start, endCycles: end, callout: board.publishedCallout))
        board.publish(sequence: calloutState.pointee.sequence)
        board.watchdogWake.signal()
        calloutState.pointee.iterationHadStall = true
    }

    /// A run is starting inside a watched callout: the outer callout stops counting (the inner
    /// loop is what can stall now). Returns it, to resume when the nested run returns.
    func suspendOuterCallout() -> PublishedCallout? {
        guard calloutState.pointee.sequence & 1 == 1 else { return nil }
        let outer = board.publishedCallout
        publishEnd(end: sw_cycles())
        return outer
    }

    /// A nested run returned: the outer callout is running again, from now.
    func resumeOuterCallout(_ outer: PublishedCallout?) {
        if let outer, calloutState.pointee.sequence & 1 == 0 { publishBegin(outer, at: sw_cycles()) }
    }

    /// Iteration bookkeeping for congestion: called where an iteration ends (before the wait).
    func finishIteration() {
        let state = calloutState
        guard state.pointee.iterationStart != 0 else { return }
        let budget = board.budgetCycles.load(ordering: .relaxed)
        let end = sw_cycles()
        let congested = !state.pointee.iterationHadStall && end &- state.pointee.iterationStart > budget
        if congested { board.congestedIterations.add(1, ordering: .relaxed) }
        // How long the loop was busy before it could look for new work: its latency. An
        // iteration event's `label` says whether it was congested (the writer blames its sites).
        state.pointee.ring?.push(
            EventRing.Event(
                descriptor: .iteration, label: congested ? EventRing.Event.congestedIteration : 0, file: 0,
                start: state.pointee.iterationStart, end: end))
        state.pointee.iterationStart = 0
        state.pointee.iterationHadStall = false
    }
}

extension MainLoop {
    /// Runs `body` as a callout of its own inside the current one (an observer or timer that
    /// runs several independent pieces of work, such as idle tasks or transaction actions):
    /// while it runs, a stall names `site`, not the enclosing callout. Loop thread only.
    package func subCallout(_ site: CalloutSite, phase: LoopActivity, _ body: () -> Void) {
        guard board.enabled.load(ordering: .relaxed) else { return body() }
        let outer = suspendOuterCallout()
        watchedCallout(site, phase: phase, mode: currentMode ?? .default, body)
        resumeOuterCallout(outer)
    }
}
