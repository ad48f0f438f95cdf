import CStallwatchShims
import Dispatch
import Foundation
import Stallwatch
import StallwatchCore

/// `stallwatch-bench loop`: the run loop against libdispatch's main queue, in the same run.
enum LoopBenchmarks {
    static let chainTasks = 2_000_000
    static let crossTasks = 1_000_000

    static func run() throws {
        let loop = MainLoop.main

        // 1. Same-thread self-reposting chain (5 runs, median), peer in a subprocess.
        let chain = median((0..<5).map { _ in chainNanosPerTask(loop, tasks: chainTasks) })
        let peerChain = median(
            try (0..<3).map { _ in try runPeer(["peer-dispatch-chain", "\(chainTasks)"]) })
        Result(
            name: "loop.chain", value: chain, unit: "ns/task", peer: "DispatchQueue.main+dispatchMain",
            peerValue: peerChain, ratio: peerChain / chain, goal: "<= 70 ns/task and >= 3x faster"
        ).printLine()

        // 1b. What the app pays on the loop thread to tell stalls what it is doing: a key of
        //     `AppState` set (a lock and a dictionary store), and an `expectLong` scope (an
        //     annotation push and pop), each against the chain's cost of one callout.
        let (stateSet, scope) = appStateAndScopeNanos(loop, count: 1_000_000)
        Result(
            name: "loop.app_state_set", value: stateSet, unit: "ns/set", peer: "loop.chain (one callout)",
            peerValue: chain, ratio: stateSet / chain, goal: "within a callout's cost"
        ).printLine()
        Result(
            name: "loop.expect_long_scope", value: scope, unit: "ns/scope", peer: "loop.chain (one callout)",
            peerValue: chain, ratio: scope / chain, goal: "within a callout's cost"
        ).printLine()

        // 2. Cross-thread posts from one producer.
        let cross = median((0..<3).map { _ in crossTasksPerSecond(loop, tasks: crossTasks) })
        let peerCross = median(
            try (0..<3).map { _ in try runPeer(["peer-dispatch-cross", "\(crossTasks)"]) })
        Result(
            name: "loop.cross_thread", value: cross, unit: "tasks/s",
            peer: "DispatchQueue.main+dispatchMain",
            peerValue: peerCross, ratio: cross / peerCross, goal: ">= peer"
        ).printLine()

        // 3. Timer lateness while idle.
        // Peer: the machine's own floor, a thread sleeping to the same deadlines with
        // clock_nanosleep(TIMER_ABSTIME) and the same 1 µs timer slack.
        let lateness = timerLatenessMicros(loop, count: 2_000)
        let floor = nanosleepLatenessMicros(count: 2_000)
        for (label, p) in [("p50", 0.5), ("p99", 0.99)] {
            let ours = percentile(lateness, p)
            let peer = percentile(floor, p)
            Result(
                name: "loop.timer_lateness.\(label)", value: ours, unit: "us", peer: "clock_nanosleep",
                peerValue: peer, ratio: peer / ours, goal: label == "p99" ? "<= 200 us" : nil
            ).printLine()
        }

        // 4. Wake-ups while idle, counted by the kernel (context switches of the loop thread).
        Result(
            name: "loop.idle_wakeups", value: idleWakeupsPerSecond(seconds: 2), unit: "wakeups/s",
            goal: "0"
        )
        .printLine()
    }

    /// Inside one callout: ns per `AppState.set` (two values in turn) and per empty
    /// `expectLong` scope, medians of 5 runs of `count`.
    static func appStateAndScopeNanos(_ loop: MainLoop, count: Int) -> (set: Double, scope: Double) {
        let results = Locked<(set: [Double], scope: [Double])>(([], []))
        loop.post {
            for _ in 0..<5 {
                var start = nowNanos()
                for index in 0..<count { AppState.set("screen", index & 1 == 0 ? "Feed" : "Detail") }
                let set = Double(nowNanos() - start) / Double(count)
                start = nowNanos()
                var sink = 0
                for index in 0..<count { sink &+= expectLong("bench.scope") { index } }
                let scope = Double(nowNanos() - start) / Double(count)
                if sink == 42 { print("") }
                results.withLock {
                    $0.set.append(set)
                    $0.scope.append(scope)
                }
            }
            AppState.clear()
            loop.stop()
        }
        loop.run()
        return results.withLock { (median($0.set), median($0.scope)) }
    }

    static func chainNanosPerTask(_ loop: MainLoop, tasks: Int, workNanos: UInt64 = 0) -> Double {
        let chain = Chain(loop: loop, tasks: tasks)
        chain.workNanos = workNanos
        chain.start = nowNanos()
        loop.post(chain.step)
        loop.run()
        return Double(chain.elapsed) / Double(tasks)
    }

    /// A self-reposting chain; each post captures only the chain, as in the peer.
    final class Chain: @unchecked Sendable {
        let loop: MainLoop
        var remaining: Int
        var start: UInt64 = 0
        var elapsed: UInt64 = 0
        /// How long each step works (reading the clock) before it posts the next: 0 for none.
        var workNanos: UInt64 = 0

        init(loop: MainLoop, tasks: Int) {
            self.loop = loop
            remaining = tasks
        }

        @Sendable func step() {
            if workNanos > 0 {
                let begin = nowNanos()
                while nowNanos() - begin < workNanos {}
            }
            remaining -= 1
            if remaining == 0 {
                elapsed = nowNanos() - start
                loop.stop()
            } else {
                loop.post { self.step() }
            }
        }
    }

    static func crossTasksPerSecond(_ loop: MainLoop, tasks: Int) -> Double {
        let done = Box(0)
        let elapsed = Box<UInt64>(0)
        let start = nowNanos()
        let producer = Thread {
            for _ in 0..<tasks {
                loop.post {
                    done.value += 1
                    if done.value == tasks {
                        elapsed.value = nowNanos() - start
                        loop.stop()
                    }
                }
            }
        }
        producer.start()
        loop.run()
        return Double(tasks) / (Double(elapsed.value) / 1e9)
    }

    static func timerLatenessMicros(_ loop: MainLoop, count: Int) -> [Double] {
        let lateness = Box<[Double]>([])
        var generator = SystemRandomNumberGenerator()
        func arm() {
            let delay = UInt64.random(in: 1_000_000...3_000_000, using: &generator)
            let due = nowNanos() + delay
            loop.schedule(after: .nanoseconds(Int64(delay))) { _ in
                lateness.value.append(Double(nowNanos() - due) / 1000)
                if lateness.value.count == count { loop.stop() } else { arm() }
            }
        }
        arm()
        loop.run()
        return lateness.value
    }

    static func nanosleepLatenessMicros(count: Int) -> [Double] {
        let result = Box<[Double]>([])
        let done = DispatchSemaphore(value: 0)
        Thread {
            _ = sw_set_timer_slack(1_000)
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<count {
                let due = nowNanos() + UInt64.random(in: 1_000_000...3_000_000, using: &generator)
                var target = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil) == EINTR {}
                result.value.append(Double(nowNanos() - due) / 1000)
            }
            done.signal()
        }.start()
        done.wait()
        return result.value
    }

    /// Runs an idle loop on its own thread and counts the thread's voluntary context switches.
    static func idleWakeupsPerSecond(seconds: Double) -> Double {
        let ready = DispatchSemaphore(value: 0)
        let box = Box<(MainLoop?, Int32)>((nil, 0))
        let thread = Thread {
            let loop = MainLoop()
            box.value = (loop, loop.threadID)
            ready.signal()
            loop.run()
        }
        thread.start()
        ready.wait()
        Thread.sleep(forTimeInterval: 0.2)  // let it reach its wait
        let tid = box.value.1
        let before = voluntarySwitches(tid)
        Thread.sleep(forTimeInterval: seconds)
        let after = voluntarySwitches(tid)
        box.value.0?.stop()
        return Double(after - before) / seconds
    }

    static func voluntarySwitches(_ tid: Int32) -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
            return Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? -1
        }
        return -1
    }
}
