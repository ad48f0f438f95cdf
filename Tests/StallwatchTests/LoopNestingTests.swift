// A callout may run the loop again (modal style): observers see the nested entry and exit,
// and no work runs twice or deadlocks.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite struct LoopNestingTests {
    @Test func nestedRunServicesQueuedWorkOnceAndObserversSeeBothLevels() async {
        let log = await onLoopThread { loop -> [String] in
            let log = Box<[String]>([])
            loop.addObserver([.entry, .exit]) { _, activity in log.value.append("\(activity)") }
            let ticks = Box(0)
            loop.schedule(after: .milliseconds(1), repeating: .milliseconds(5)) { timer in
                ticks.value += 1
                if ticks.value == 4 { timer.cancel() }
            }
            loop.post {
                log.value.append("outer-begin")
                let result = loop.run(mode: .default, until: .now + .milliseconds(60))
                log.value.append("nested:\(result)")
                log.value.append("outer-end")
                loop.stop()
            }
            loop.post { log.value.append("queued") }
            loop.run(mode: .default, until: .now + .seconds(5))
            log.value.append("ticks:\(ticks.value)")
            return log.value
        }
        // The nested run takes the queued post (once) and the timer's ticks, times out, and
        // hands back to the outer callout, which stops the outer run.
        #expect(
            log == [
                "entry", "outer-begin", "entry", "queued", "exit", "nested:timedOut", "outer-end", "exit",
                "ticks:4",
            ])
        #expect(log.filter { $0 == "queued" }.count == 1)
    }
}
