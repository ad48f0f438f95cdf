// A callout longer than the budget is a stall; tiers begin at 100 ms, 250 ms and 1 s.

import Testing

@testable import StallwatchCore

@Suite struct TierTests {
    let thresholds = TierThresholds()

    @Test func defaultsAreApplesNumbers() {
        #expect(thresholds.budget == .nanoseconds(16_666_667))
        #expect(thresholds.microHang == .milliseconds(100))
        #expect(thresholds.hang == .milliseconds(250))
        #expect(thresholds.severe == .seconds(1))
        #expect(TierThresholds.default == thresholds)
    }

    @Test func boundaries() {
        #expect(thresholds.tier(for: .zero) == nil)
        #expect(thresholds.tier(for: .nanoseconds(16_666_667)) == nil)
        #expect(thresholds.tier(for: .nanoseconds(16_666_668)) == .hitch)
        #expect(thresholds.tier(for: .milliseconds(99)) == .hitch)
        #expect(thresholds.tier(for: .milliseconds(100)) == .microHang)
        #expect(thresholds.tier(for: .milliseconds(249)) == .microHang)
        #expect(thresholds.tier(for: .milliseconds(250)) == .hang)
        #expect(thresholds.tier(for: .milliseconds(999)) == .hang)
        #expect(thresholds.tier(for: .seconds(1)) == .severe)
        #expect(thresholds.tier(for: .seconds(30)) == .severe)
    }

    @Test func customBudget() {
        let thirtyHz = TierThresholds(budget: .milliseconds(33))
        #expect(thirtyHz.tier(for: .milliseconds(20)) == nil)
        #expect(thirtyHz.tier(for: .milliseconds(34)) == .hitch)
    }

    @Test func tiersAreOrderedBySeverity() {
        #expect(Tier.allCases == [.hitch, .microHang, .hang, .severe])
        #expect(Tier.allCases.sorted() == Tier.allCases)
        #expect(Tier.hitch < .microHang && .microHang < .hang && .hang < .severe)
        #expect(Tier.allCases.max() == .severe)
    }
}
