// Every posted closure runs exactly once, in order per posting thread, from any thread.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite struct LoopPostTests {
    @Test func fourProducersTimesHundredThousandPostsRunOnceInOrder() async {
        let producers = 4
        let perProducer = 100_000
        final class Tally: @unchecked Sendable {
            var last: [Int]
            var total = 0
            var outOfOrder = 0
            init(_ producers: Int) { last = [Int](repeating: -1, count: producers) }
        }
        let result = await onLoopThread { loop -> Tally in
            let tally = Tally(producers)
            for producer in 0..<producers {
                Thread {
                    for sequence in 0..<perProducer {
                        loop.post {
                            if tally.last[producer] != sequence - 1 { tally.outOfOrder += 1 }
                            tally.last[producer] = sequence
                            tally.total += 1
                            if tally.total == producers * perProducer { loop.stop() }
                        }
                    }
                }.start()
            }
            // A lost wake-up would leave the loop asleep with posts queued: fail, don't hang.
            loop.run(mode: .default, until: .now + .seconds(60))
            return tally
        }
        #expect(result.total == producers * perProducer)
        #expect(result.outOfOrder == 0)
        #expect(result.last == [Int](repeating: perProducer - 1, count: producers))
    }

    @Test func anIdleLoopWakesForAPostFromAnotherThread() async {
        let ran = await onLoopThread { loop -> Bool in
            let ran = Box(false)
            Thread {
                usleep(50_000)  // the loop is asleep in its wait by now
                loop.post {
                    ran.value = loop.isCurrent
                    loop.stop()
                }
            }.start()
            return loop.run(mode: .default, until: .now + .seconds(10)) == .stopped && ran.value
        }
        #expect(ran)
    }

    @Test func samethreadPostsRunAfterTheCurrentCalloutNotInsideIt() async {
        let order = await onLoopThread { loop -> [Int] in
            let order = Box<[Int]>([])
            loop.post {
                loop.post { order.value.append(2) }
                order.value.append(1)
            }
            loop.post { order.value.append(3) }
            loop.runOnce()
            return order.value
        }
        #expect(order == [1, 3, 2])
    }

    @Test func stopFromAnotherThreadEndsRun() async {
        let result = await onLoopThread { loop -> MainLoop.RunResult in
            Thread {
                usleep(30_000)
                loop.stop()
            }.start()
            return loop.run(mode: .default, until: .now + .seconds(10))
        }
        #expect(result == .stopped)
    }
}
