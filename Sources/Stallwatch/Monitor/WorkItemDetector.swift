/// When a stall of one executor begins, is sampled and ends, decided from what the executor
/// publishes about its work items: pure, with the time passed in, so it is tested in virtual time
/// (`WorkItemDetectorTests`) and any source with exact item boundaries can drive it.
///
/// The source publishes a sequence number (odd while an item runs, with the item's start; even
/// while the executor waits) and a log of the items that ran longer than the budget, with their
/// exact start and end. The watchdog looks (`look`) whenever the detector asked it to (`wakeAt`)
/// or sooner, and carries out the actions it gets back: an item still running at its start +
/// budget is a stall (`began`), sampled every `interval(elapsed)` (`sample`) until the sequence
/// moves on (`ended`, with the item's own end from the log); an item that overran while the
/// watchdog was not looking (it got no CPU) is a stall found after the fact (`missed`).
///
/// Every source of exact item boundaries drives it: `MainLoop`'s callout board
/// (`StallMonitor`'s watchdog) and the loop slots of the preload library — event-loop threads
/// found by their waits, `DispatchQueue.main`'s items, Swift jobs (`sw_loop_slot.h`,
/// `HeartbeatMonitor.stepLoop`); see docs/watchdog.md.
struct WorkItemDetector: Sendable {
    /// An item that ran longer than the budget, as the source logged it (CLOCK_MONOTONIC ns).
    struct Overrun: Equatable, Sendable {
        var sequence: UInt64
        var start: UInt64
        var end: UInt64
    }

    /// What the source shows at a look.
    struct Look: Equatable, Sendable {
        /// Odd while an item runs, even while the executor waits.
        var sequence: UInt64
        /// The running item's start (meaningful when `sequence` is odd).
        var start: UInt64
        /// Items that overran since the last look, oldest first.
        var overruns: [Overrun] = []
        /// The executor is gone (its thread exited, its loop was closed): a stall in progress
        /// ends unfinished, and nothing more is timed.
        var gone = false
    }

    enum Action: Equatable, Sendable {
        /// Item `sequence`, started at `start`, is still running at its deadline: a stall.
        case began(sequence: UInt64, start: UInt64)
        /// Take a sample of the stalled thread now.
        case sample
        /// The stall of item `sequence` is over: it ran from `start` to `end` (the item's own
        /// end if the source logged it, else the time of the look that saw it over, `exact` false).
        case ended(sequence: UInt64, start: UInt64, end: UInt64, exact: Bool)
        /// The stall in progress can no longer be followed (`Look.gone`): it ends unfinished.
        case abandoned(sequence: UInt64, start: UInt64)
        /// Item `sequence` overran while nobody looked: a stall found after it ended.
        case missed(Overrun)
    }

    let budget: UInt64
    /// The sampling interval after a stall has lasted `elapsed` ns.
    let interval: @Sendable (_ elapsed: UInt64) -> UInt64

    /// The stall being sampled: its item and when the next sample is due.
    private(set) var stalled: (sequence: UInt64, start: UInt64, nextSample: UInt64)?
    /// The last item timed as a stall (its log entry is not a missed stall), and the one before
    /// it (`withdraw`).
    private var timed: UInt64 = 0
    private var timedBefore: UInt64 = 0
    /// The next time the watchdog must look (nil: only when the source says so, or its poll).
    private(set) var wakeAt: UInt64?

    init(budget: UInt64, interval: @escaping @Sendable (_ elapsed: UInt64) -> UInt64) {
        self.budget = budget
        self.interval = interval
    }

    /// The actions for what the source shows at `now`.
    mutating func look(_ look: Look, now: UInt64) -> [Action] {
        var actions: [Action] = []
        if let stall = stalled {
            if look.sequence != stall.sequence {
                let logged = look.overruns.last { $0.sequence == stall.sequence }
                actions.append(
                    .ended(
                        sequence: stall.sequence, start: stall.start, end: logged?.end ?? now, exact: logged != nil))
                stalled = nil
            } else if look.gone {
                actions.append(.abandoned(sequence: stall.sequence, start: stall.start))
                stalled = nil
            } else if now >= stall.nextSample {
                actions.append(.sample)
                stalled?.nextSample = now &+ interval(now &- stall.start)
            }
        }
        for overrun in look.overruns where overrun.sequence != timed && overrun.sequence != stalled?.sequence {
            actions.append(.missed(overrun))
        }
        wakeAt = stalled?.nextSample
        guard stalled == nil, !look.gone, look.sequence & 1 == 1, look.sequence != timed else { return actions }
        let deadline = look.start.saturatingAdding(budget)
        if now >= deadline {
            actions.append(.began(sequence: look.sequence, start: look.start))
            actions.append(.sample)
            timedBefore = timed
            timed = look.sequence
            let next = now &+ interval(now &- look.start)
            stalled = (look.sequence, look.start, next)
            wakeAt = next
        } else {
            wakeAt = deadline
        }
        return actions
    }

    /// The stall just `began` cannot be followed: the source showed its item over before the
    /// stall was declared to it (`MainLoop`'s board logs a declared item's end whatever its
    /// length). Nothing was delivered; the item's log entry, if any, is a `missed` stall at the
    /// next look like any other.
    mutating func withdraw() {
        guard let stall = stalled else { return }
        if timed == stall.sequence { timed = timedBefore }
        stalled = nil
        wakeAt = nil
    }
}
