// A frame clock ticks on a fixed grid; frames the loop was too busy for are dropped and counted.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite struct FrameClockTests {
    @Test func ticksOnTheGridAndCountsDroppedFrames() async {
        let result = await onLoopThread {
            loop -> (ticks: [FrameTick], expected: UInt64, delivered: UInt64, dropped: UInt64) in
            var ticks: [FrameTick] = []
            var clock: FrameClock?
            clock = FrameClock(loop: loop, framesPerSecond: 60) { tick in
                ticks.append(tick)
                if ticks.count == 5 { usleep(80_000) }  // ~4.8 frames of work
                if ticks.count == 10 {
                    clock?.stop()
                    loop.stop()
                }
            }
            clock!.start()
            loop.run()
            let counts = (ticks, clock!.framesExpected, clock!.framesDelivered, clock!.framesDropped)
            clock = nil  // the tick closure holds the clock through this variable: break the cycle
            return counts
        }
        #expect(result.delivered == 10)
        #expect(result.dropped >= 3 && result.dropped <= 7, "dropped \(result.dropped)")
        #expect(result.expected == result.delivered + result.dropped)
        let interval = UInt64(1_000_000_000 / 60)
        for (previous, tick) in zip(result.ticks, result.ticks.dropFirst()) {
            #expect(tick.frameIndex == previous.frameIndex + 1 + tick.droppedSinceLastTick)
            #expect(
                tick.targetNanos == previous.targetNanos + (tick.frameIndex - previous.frameIndex)
                    * interval)
        }
        #expect(result.ticks.map(\.droppedSinceLastTick).reduce(0, +) == result.dropped)
    }
}
