// One iteration passes its activities in CFRunLoop order, with each kind of work in its phase.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite struct LoopActivityTests {
    @Test func iterationWithTimerPostAndSourceRunsPhasesInOrder() async {
        let log = await onLoopThread { loop -> [String] in
            var log: [String] = []
            let pipe = TestPipe()
            loop.addObserver(.all) { _, activity in log.append("\(activity)") }
            loop.schedule(after: .zero) { _ in log.append("timer") }
            let posted = Box(false)
            loop.post { posted.value = true }
            pipe.write("x")
            try! loop.addSource(fd: pipe.readFD, .readable) { source, _ in
                log.append("source:\(pipe.read())")
                source.cancel()
            }
            log.append("result:\(loop.runOnce())")
            log.append("posted:\(posted.value)")
            return log
        }
        #expect(
            log == [
                "entry", "beforeTimers", "timer", "beforeSources", "source:x", "exit", "result:handledWork",
                "posted:true",
            ])
    }

    @Test func idleIterationWaitsThenFiresTheTimerInTheNextIteration() async {
        let log = await onLoopThread { loop -> [String] in
            var log: [String] = []
            loop.addObserver(.all) { _, activity in log.append("\(activity)") }
            // Scheduled from inside the first iteration, microseconds before the loop decides to
            // wait, so even a slow start cannot make it due before that wait.
            loop.addObserver(.beforeSources, order: -1, repeats: false) { _, _ in
                loop.schedule(after: .milliseconds(100)) { _ in log.append("timer") }
            }
            log.append("result:\(loop.runOnce())")
            return log
        }
        #expect(
            log == [
                "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "beforeTimers",
                "timer",
                "beforeSources", "exit", "result:handledWork",
            ])
    }

    @Test func runOnceSaysWhyItReturned() async {
        let results = await onLoopThread { loop -> [MainLoop.RunResult] in
            var results: [MainLoop.RunResult] = []
            results.append(loop.runOnce(timeout: .milliseconds(10)))
            loop.post {}
            results.append(loop.runOnce(timeout: .zero))
            loop.stop()
            results.append(loop.runOnce(timeout: .seconds(5)))
            results.append(loop.runOnce(mode: MainLoop.Mode("empty-\(UUID())"), timeout: .seconds(5)))
            return results
        }
        #expect(results == [.timedOut, .handledWork, .stopped, .finished])
    }
}
