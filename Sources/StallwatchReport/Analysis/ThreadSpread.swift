import StallwatchCore

/// How many threads a stall's looks sampled, and on how many of them its representative stack
/// was: what a pool starvation comes to ("`usleep ← blockingWork()` on 2 of 2 threads"). A
/// look is as `StallAccounting.lookEnd` says.
///
/// A plain value; use it on any thread.
package struct ThreadSpread: Sendable, Hashable, Encodable {
    /// The most threads one look sampled.
    package var threads: Int
    /// In most looks that sampled `threads` threads, how many had the representative stack
    /// (its function names, as `RepresentativeStack` groups stacks).
    package var withStack: Int

    /// The spread of `analyzed`'s looks, `nil` for a stall of one thread (every look one
    /// sample) or without a representative stack.
    package init?(_ analyzed: AnalyzedStall) {
        let samples = analyzed.stall.samples
        guard let representative = analyzed.representativeSample else { return nil }
        let key = RepresentativeStack.groupKey(samples[representative].frames)
        var looks: [(size: Int, withStack: Int)] = []
        var index = 0
        while index < samples.count {
            let end = StallAccounting.lookEnd(from: index, count: samples.count) { samples[$0].look }
            let withStack = samples[index..<end].count { RepresentativeStack.groupKey($0.frames) == key }
            looks.append((end - index, withStack))
            index = end
        }
        guard let threads = looks.map(\.size).max(), threads > 1 else { return nil }
        var counts: [Int: Int] = [:]
        for look in looks where look.size == threads { counts[look.withStack, default: 0] += 1 }
        self.threads = threads
        // The most frequent count; a tie goes to the larger.
        withStack = counts.max { ($0.value, $0.key) < ($1.value, $1.key) }?.key ?? 0
    }
}
