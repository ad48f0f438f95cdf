// Observers run in their order, one-shot observers once, and any observer may remove itself
// or another from inside a callback.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite struct LoopObserverTests {
    @Test func observersRunByOrderThenRegistration() async {
        let log = await onLoopThread { loop -> [String] in
            var log: [String] = []
            loop.addObserver(.beforeTimers, order: 2) { _, _ in log.append("2") }
            loop.addObserver(.beforeTimers, order: 1) { _, _ in log.append("1a") }
            loop.addObserver(.beforeTimers, order: 3) { _, _ in log.append("3") }
            loop.addObserver(.beforeTimers, order: 1) { _, _ in log.append("1b") }
            loop.post {}
            loop.runOnce(timeout: .zero)
            return log
        }
        #expect(log == ["1a", "1b", "2", "3"])
    }

    @Test func selfRemovalOneShotAndRemovingAnotherMidNotification() async {
        let counts = await onLoopThread { loop -> [String: Int] in
            var counts: [String: Int] = [:]
            loop.addObserver(.beforeSources) { observer, _ in
                counts["self", default: 0] += 1
                observer.remove()
            }
            loop.addObserver(.beforeSources, repeats: false) { _, _ in counts["once", default: 0] += 1 }
            var victim: MainLoop.Observer?
            loop.addObserver(.beforeSources, order: -1) { _, _ in
                counts["remover", default: 0] += 1
                victim?.remove()
            }
            victim = loop.addObserver(.beforeSources, order: 5) { _, _ in
                counts["victim", default: 0] += 1
            }
            for _ in 0..<3 {
                loop.post {}
                loop.runOnce(timeout: .zero)
            }
            return counts
        }
        #expect(counts == ["self": 1, "once": 1, "remover": 3])
    }
}
