import Testing

@testable import Stallwatch

/// The detector in virtual time: every look is at a time the test chooses, so each case is
/// exact and takes no real time (as swift-nio's `EmbeddedEventLoop.advanceTime(by:)` tests its
/// timers). Times are in milliseconds, turned into nanoseconds by `ms`.
@Suite struct WorkItemDetectorTests {
    typealias Look = WorkItemDetector.Look
    typealias Overrun = WorkItemDetector.Overrun

    func ms(_ value: Double) -> UInt64 { UInt64(value * 1_000_000) }

    /// A 16 ms budget, sampled every 5 ms.
    func detector() -> WorkItemDetector {
        WorkItemDetector(budget: 16_000_000) { _ in 5_000_000 }
    }

    @Test func itemsWithinTheBudgetBackToBackAreNoStall() {
        var detector = detector()
        var actions: [WorkItemDetector.Action] = []
        // Items of 10 ms, back to back, each looked at just before its deadline and just after
        // it ended: the watchdog is asked to wake at each item's deadline, and nothing happens.
        for item in 0..<100 {
            let start = ms(Double(item) * 10)
            let sequence = UInt64(item) * 2 + 1
            actions += detector.look(Look(sequence: sequence, start: start), now: start + ms(9))
            #expect(detector.wakeAt == start + ms(16))
        }
        #expect(actions.isEmpty)
    }

    @Test func anItemPastItsDeadlineIsAStallSampledUntilItEndsAtItsOwnEnd() {
        var detector = detector()
        #expect(detector.look(Look(sequence: 1, start: ms(100)), now: ms(101)).isEmpty)
        #expect(detector.wakeAt == ms(116))
        // At the deadline: a stall, and its first sample.
        #expect(
            detector.look(Look(sequence: 1, start: ms(100)), now: ms(116)) == [
                .began(sequence: 1, start: ms(100)), .sample,
            ])
        #expect(detector.wakeAt == ms(121))
        // Too early for the next sample: nothing.
        #expect(detector.look(Look(sequence: 1, start: ms(100)), now: ms(119)).isEmpty)
        #expect(detector.look(Look(sequence: 1, start: ms(100)), now: ms(121)) == [.sample])
        // The item ended at 160 ms and the next one began: the stall ends at the logged end,
        // not at the look; the next item is timed afresh.
        let overrun = Overrun(sequence: 1, start: ms(100), end: ms(160))
        #expect(
            detector.look(Look(sequence: 3, start: ms(161), overruns: [overrun]), now: ms(163)) == [
                .ended(sequence: 1, start: ms(100), end: ms(160), exact: true)
            ])
        #expect(detector.wakeAt == ms(177))
    }

    @Test func aStallWhoseEndWasNotLoggedEndsAtTheLookThatSawItOver() {
        var detector = detector()
        _ = detector.look(Look(sequence: 1, start: 0), now: ms(20))
        #expect(
            detector.look(Look(sequence: 2, start: 0), now: ms(40)) == [
                .ended(sequence: 1, start: 0, end: ms(40), exact: false)
            ])
    }

    @Test func anOverrunNobodyLookedAtIsAMissedStallOnce() {
        var detector = detector()
        _ = detector.look(Look(sequence: 1, start: 0), now: ms(1))
        // The watchdog got no CPU for 200 ms: item 1 ran 80 ms and item 3 ran 5 ms meanwhile.
        let overrun = Overrun(sequence: 1, start: 0, end: ms(80))
        #expect(
            detector.look(Look(sequence: 4, start: ms(85), overruns: [overrun]), now: ms(200)) == [.missed(overrun)])
        #expect(detector.look(Look(sequence: 4, start: ms(85)), now: ms(210)).isEmpty)
        #expect(detector.wakeAt == nil)
    }

    @Test func theTimedStallsLogEntryIsNotAlsoAMissedStall() {
        var detector = detector()
        _ = detector.look(Look(sequence: 1, start: 0), now: ms(17))
        let own = Overrun(sequence: 1, start: 0, end: ms(30))
        let other = Overrun(sequence: 3, start: ms(31), end: ms(60))
        // Its end and the next overrun arrive at one look (the watchdog was late).
        #expect(
            detector.look(Look(sequence: 5, start: ms(61), overruns: [own, other]), now: ms(62)) == [
                .ended(sequence: 1, start: 0, end: ms(30), exact: true), .missed(other),
            ])
        // The log entry read again later (a new cursor) is still not missed.
        #expect(!detector.look(Look(sequence: 5, start: ms(61), overruns: [own]), now: ms(63)).contains(.missed(own)))
    }

    @Test func anItemAlreadyPastItsDeadlineAtTheFirstLookIsAStallFromItsStart() {
        var detector = detector()
        // The watchdog started (or found the loop) while an item had run for 300 ms.
        #expect(
            detector.look(Look(sequence: 7, start: ms(1_000)), now: ms(1_300)) == [
                .began(sequence: 7, start: ms(1_000)), .sample,
            ])
    }

    @Test func backToBackStallsAreTwoStallsNotOne() {
        var detector = detector()
        _ = detector.look(Look(sequence: 1, start: 0), now: ms(20))
        // Item 1 ended at 50 ms; item 3 started at once and is itself past its deadline.
        let first = Overrun(sequence: 1, start: 0, end: ms(50))
        #expect(
            detector.look(Look(sequence: 3, start: ms(50), overruns: [first]), now: ms(70)) == [
                .ended(sequence: 1, start: 0, end: ms(50), exact: true), .began(sequence: 3, start: ms(50)), .sample,
            ])
    }

    @Test func aLoopThatGoesAwayEndsItsStallUnfinishedAndIsNotTimedAgain() {
        var detector = detector()
        _ = detector.look(Look(sequence: 1, start: 0), now: ms(20))
        #expect(
            detector.look(Look(sequence: 1, start: 0, gone: true), now: ms(30)) == [.abandoned(sequence: 1, start: 0)])
        // A thread that goes on with other work after its loop closed is not a stall.
        var after = self.detector()
        #expect(after.look(Look(sequence: 9, start: 0, gone: true), now: ms(500)).isEmpty)
        // Gone, but its stall had ended at its own end first: ended, not abandoned.
        var ended = self.detector()
        _ = ended.look(Look(sequence: 1, start: 0), now: ms(20))
        let overrun = Overrun(sequence: 1, start: 0, end: ms(25))
        #expect(
            ended.look(Look(sequence: 3, start: ms(26), overruns: [overrun], gone: true), now: ms(40)) == [
                .ended(sequence: 1, start: 0, end: ms(25), exact: true)
            ])
    }

    @Test func aWaitingExecutorAsksForNoWakeUp() {
        var detector = detector()
        #expect(detector.look(Look(sequence: 2, start: ms(5)), now: ms(100)).isEmpty)
        #expect(detector.wakeAt == nil)
    }

    @Test func manyLoopsAreIndependent() {
        var loops = (0..<64).map { _ in detector() }
        var stalls = 0
        for (index, _) in loops.enumerated() {
            // Loop i's item started at i ms; at 40 ms those started before 24 ms are stalled.
            let actions = loops[index].look(Look(sequence: 1, start: ms(Double(index))), now: ms(40))
            stalls += actions.filter { if case .began = $0 { true } else { false } }.count
        }
        #expect(stalls == 25)
    }

    @Test func aStallWithdrawnBeforeItWasDeclaredIsAMissedStallFromTheLog() {
        // MainLoop's watchdog declares a stall to the loop after the detector began it; the
        // callout ended in between, so the stall is withdrawn and the loop's log entry (a
        // declared callout is logged whatever its length) is a missed stall at the next look.
        var detector = detector()
        #expect(detector.look(Look(sequence: 1, start: 0), now: ms(16)) == [.began(sequence: 1, start: 0), .sample])
        detector.withdraw()
        #expect(detector.stalled == nil && detector.wakeAt == nil)
        let logged = Overrun(sequence: 1, start: 0, end: ms(16))
        #expect(detector.look(Look(sequence: 2, start: 0, overruns: [logged]), now: ms(17)) == [.missed(logged)])
        // A withdrawal forgets only that item: the stall timed before it stays timed.
        var earlier = self.detector()
        _ = earlier.look(Look(sequence: 1, start: 0), now: ms(20))
        let first = Overrun(sequence: 1, start: 0, end: ms(30))
        _ = earlier.look(Look(sequence: 3, start: ms(31), overruns: [first]), now: ms(47))
        earlier.withdraw()
        #expect(earlier.look(Look(sequence: 4, start: ms(31), overruns: [first]), now: ms(50)).isEmpty)
    }

    @Test func aNestedRunTimesTheInnerItemsAndTheOuterItemAfreshFromItsResumption() {
        // MainLoop's nested run: the outer callout (1) stops counting when the inner run starts
        // (its sequence moves on), the inner callout (3) stalls, and the outer one resumes as a
        // new item (5) from its resumption: one stall, of the inner callout, not of the outer.
        var detector = detector()
        var actions = detector.look(Look(sequence: 1, start: 0), now: ms(4))
        actions += detector.look(Look(sequence: 3, start: ms(5)), now: ms(21))
        let inner = Overrun(sequence: 3, start: ms(5), end: ms(45))
        actions += detector.look(Look(sequence: 5, start: ms(45), overruns: [inner]), now: ms(46))
        actions += detector.look(Look(sequence: 6, start: ms(45)), now: ms(80))
        #expect(
            actions == [
                .began(sequence: 3, start: ms(5)), .sample, .ended(sequence: 3, start: ms(5), end: ms(45), exact: true),
            ])
    }

    @Test func aHeartbeatsWaitCountsFromWhatTheSourceSaysWasItsStart() {
        // The main queue's heartbeat waits behind timed items: the source shows its item as not
        // running while an item runs, then as starting at the last item's end. The deadline
        // moves with the start; the detector holds no deadline of its own.
        var detector = detector()
        #expect(detector.look(Look(sequence: 1, start: 0), now: ms(10)).isEmpty)
        #expect(detector.wakeAt == ms(16))
        #expect(detector.look(Look(sequence: 0, start: 0), now: ms(16)).isEmpty)  // behind an item
        #expect(detector.look(Look(sequence: 1, start: ms(30)), now: ms(31)).isEmpty)
        #expect(detector.wakeAt == ms(46))
        #expect(
            detector.look(Look(sequence: 1, start: ms(30)), now: ms(46)) == [
                .began(sequence: 1, start: ms(30)), .sample,
            ])
    }
}
