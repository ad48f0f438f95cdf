// File-descriptor sources fire while ready, may cancel themselves or others, and a dead or
// closed descriptor is reported instead of spinning the loop.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite struct LoopSourceTests {
    @Test func pipeReaderGetsDataThenAFinalHangup() async {
        let log = await onLoopThread { loop -> [String] in
            var log: [String] = []
            let pipe = TestPipe()
            let source = try! loop.addSource(fd: pipe.readFD, .readable) { source, events in
                if events.contains(.readable) {
                    let text = pipe.read()
                    log.append(text.isEmpty ? "eof" : text)
                }
                if events.contains(.hangup) && !events.contains(.readable) { log.append("hangup") }
            }
            Thread {
                for message in ["a", "b", "c"] {
                    pipe.write(message)
                    usleep(20_000)
                }
                pipe.close(pipe.writeFD)
            }.start()
            // Runs until nothing is left in the mode: the source cancels itself after the hang-up.
            var iterations = 0
            while source.isValid && iterations < 1000 {
                loop.runOnce(timeout: .seconds(5))
                iterations += 1
            }
            log.append("valid:\(source.isValid) iterations<50:\(iterations < 50)")
            return log
        }
        // A pipe at end of file reports a hang-up with nothing to read: the last event.
        #expect(log.dropLast(2).joined() == "abc")
        #expect(log.suffix(2) == ["hangup", "valid:false iterations<50:true"])
    }

    @Test func writableSourceAndCancellingAnotherSourceFromAHandler() async {
        let log = await onLoopThread { loop -> [String] in
            var log: [String] = []
            let first = TestPipe()
            let second = TestPipe()
            first.write("1")
            second.write("2")
            // Both are ready in the same wait; whichever runs first cancels the other.
            var sources: [MainLoop.Source] = []
            for pipe in [first, second] {
                sources.append(
                    try! loop.addSource(fd: pipe.readFD, .readable) { _, _ in
                        log.append("read:\(pipe.read())")
                        for source in sources { source.cancel() }
                    })
            }
            try! loop.addSource(fd: first.writeFD, .writable) { source, events in
                log.append("writable:\(events.contains(.writable))")
                source.cancel()
            }
            loop.runOnce(timeout: .seconds(1))
            loop.runOnce(timeout: .milliseconds(20))
            return log
        }
        #expect(log.count == 2)
        #expect(log.contains("writable:true"))
        #expect(log.contains("read:1") != log.contains("read:2"))
    }

    @Test func aClosedDescriptorIsAnErrorNotASpin() async {
        let outcome = await onLoopThread { loop -> String in
            // A number far above what parallel tests open (descriptors are allocated lowest
            // first), made valid and then closed, so nobody else can hold it.
            let pipe = TestPipe()
            let closedFD: Int32 = 987
            precondition(dup2(pipe.readFD, closedFD) == closedFD)
            close(closedFD)
            do {
                try loop.addSource(fd: closedFD, .readable) { _, _ in }
                return "no error"
            } catch let error as SystemError {
                return "errno \(error.errno)"
            } catch {
                return "\(error)"
            }
        }
        #expect(outcome == "errno \(EBADF)")
    }

    @Test func writerToAPipeNobodyReadsGetsAnErrorAndIsCancelled() async {
        let outcome = await onLoopThread { loop -> (events: [MainLoop.SourceEvents], valid: Bool) in
            var events: [MainLoop.SourceEvents] = []
            let pipe = TestPipe()
            pipe.close(pipe.readFD)
            let source = try! loop.addSource(fd: pipe.writeFD, .writable) { _, got in events.append(got) }
            for _ in 0..<5 { loop.runOnce(timeout: .milliseconds(10)) }
            return (events, source.isValid)
        }
        #expect(outcome.events.count == 1)
        #expect(outcome.events.first?.contains(.error) == true)
        #expect(!outcome.valid)
    }
}
