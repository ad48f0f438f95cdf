// Run-loop transactions coalesce repeated requests by (target, action) into one run each, in
// the order first requested, at beforeWaiting and exit, after every other observer.
import Foundation
import StallwatchTestSupport
import Testing

@testable import Stallwatch
@testable import StallwatchRemedies

@Suite struct RemedyTransactionsTests {
    final class View {
        let name: String
        init(_ name: String) { self.name = name }
    }

    @Test func repeatedRequestsRunOnceInFirstRequestedOrderWithTheLatestBody() async {
        let log = await onLoopThread { loop -> [String] in
            let transactions = LoopTransactions(loop: loop)
            let log = Box<[String]>([])
            let a = View("a")
            let b = View("b")
            loop.schedule(after: .zero) { _ in
                transactions.request(a, "layout") { log.value.append("\($0.name).layout 1") }
                transactions.request(b, "layout") { log.value.append("\($0.name).layout") }
                transactions.request(a, "draw") { log.value.append("\($0.name).draw") }
                transactions.request(a, "layout") { log.value.append("\($0.name).layout 2") }
                transactions.request(b, "layout") { log.value.append("\($0.name).layout again") }
                #expect(transactions.pendingCount == 3)
            }
            loop.schedule(after: .milliseconds(50)) { _ in loop.stop() }
            loop.run(mode: .default, until: .now + .seconds(10))
            #expect(transactions.commits == 1)
            _ = (a, b)
            return log.value
        }
        #expect(log == ["a.layout 2", "b.layout again", "a.draw"])
    }

    @Test func theCommitRunsAfterEveryOtherObserverOfBeforeWaiting() async {
        let log = await onLoopThread { loop -> [String] in
            let log = Box<[String]>([])
            let transactions = LoopTransactions(loop: loop)
            // Added after the transactions, with a high order: still before the commit.
            let observer = loop.addObserver(.beforeWaiting, order: 1_000_000) { _, _ in
                if !log.value.isEmpty || transactions.pendingCount > 0 { log.value.append("observer") }
            }
            let view = View("v")
            loop.schedule(after: .zero) { _ in transactions.request(view, "layout") { _ in log.value.append("commit") }
            }
            loop.schedule(after: .milliseconds(50)) { _ in loop.stop() }
            loop.run(mode: .default, until: .now + .seconds(10))
            observer.remove()
            return Array(log.value.prefix(2))
        }
        #expect(log == ["observer", "commit"])
    }

    @Test func aFreedTargetsActionsAreSkipped() async {
        let ran = await onLoopThread { loop -> [String] in
            let transactions = LoopTransactions(loop: loop)
            let ran = Box<[String]>([])
            let kept = View("kept")
            loop.schedule(after: .zero) { _ in
                var doomed: View? = View("doomed")
                transactions.request(doomed!, "layout") { ran.value.append($0.name) }
                transactions.request(kept, "layout") { ran.value.append($0.name) }
                doomed = nil
                _ = doomed
            }
            loop.schedule(after: .milliseconds(50)) { _ in loop.stop() }
            loop.run(mode: .default, until: .now + .seconds(10))
            _ = kept
            return ran.value
        }
        #expect(ran == ["kept"])
    }

    @Test func aRequestMadeDuringACommitRunsAtTheNextOneWithoutAnotherWakeUp() async {
        let outcome = await onLoopThread { loop -> (log: [String], commits: Int) in
            let transactions = LoopTransactions(loop: loop)
            let log = Box<[String]>([])
            let view = View("v")
            loop.schedule(after: .zero) { _ in
                transactions.request(view, "layout") { view in
                    log.value.append("layout")
                    transactions.request(view, "draw") { _ in
                        log.value.append("draw")
                        loop.stop()
                    }
                }
            }
            // Nothing else would wake the loop: the second commit must come by itself.
            loop.run(mode: .default, until: .now + .seconds(5))
            return (log.value, transactions.commits)
        }
        #expect(outcome.log == ["layout", "draw"])
        #expect(outcome.commits == 2)
    }

    @Test func leavingARunCommits() async {
        let log = await onLoopThread { loop -> [String] in
            let transactions = LoopTransactions(loop: loop, activities: .exit)
            let log = Box<[String]>([])
            let view = View("v")
            loop.schedule(after: .zero) { _ in
                transactions.request(view, "layout") { _ in log.value.append("layout") }
                loop.stop()
            }
            loop.run(mode: .default, until: .now + .seconds(5))
            log.value.append("returned")
            return log.value
        }
        #expect(log == ["layout", "returned"])
    }

    @Test func aSlowActionIsReportedByItsNameAndWhereItWasFirstRequested() async throws {
        let line = Box<UInt>(0)
        // The settle period starts before the commit: long enough after the 60 ms action for
        // the watchdog to see it end (50 ms would stop the monitor first on a slow machine).
        let run = try await monitored(settle: .milliseconds(300)) { loop, _ in
            let transactions = LoopTransactions(loop: loop)
            let view = View("v")
            line.value = #line + 1
            transactions.request(view, "relayout") { _ in usleep(60_000) }
            transactions.request(view, "relayout") { _ in usleep(60_000) }
            loop.schedule(after: .seconds(1)) { _ in _ = (transactions, view) }  // alive through the run
        }
        #expect(run.ended.count == 1)
        let stall = try #require(run.ended.first)
        #expect(stall.callout.label == "relayout")
        #expect(stall.callout.line == UInt32(line.value))
    }
}
