// Dispatched items timed where they run (sw_loop_slot.h): what the preload library's dispatch
// trampolines do around each main-queue item and each Swift job, done here by hand on real
// threads. The recorded programs (HeartbeatSampleTests) check the trampolines themselves.
import CStallwatchSampler
import CStallwatchShims
import Foundation
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

/// The registry is the process's: one test at a time, each from an empty registry.
@Suite(.serialized) struct DispatchItemTests {
    static let mainQueue: Int32 = 1
    static let job: Int32 = 0

    /// The slots' budget in these tests: 20 ms of TSC cycles (an empty item under it is not
    /// logged; a preemption that long inside one would be).
    static let budget = Timebase.shared.cycles(20_000_000)

    /// An item longer than the budget by the slot's own clock (its cycles), whatever the
    /// machine's load: no sleep, whose length the wall clock and EINTR decide.
    static func runPastTheBudget() {
        let start = sw_cycles()
        while sw_cycles() - start <= budget {}
    }

    /// Runs `body` on a new thread and waits until the thread has exited (its thread-exit key ran).
    func onThread(named name: String, _ body: @escaping @Sendable () -> Void) {
        pthread_join(start(named: name, body), nil)
    }

    /// Starts a thread named `name` running `body`; join it.
    func start(named name: String, _ body: @escaping @Sendable () -> Void) -> pthread_t {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Body(name: name, run: body))
        pthread_create(
            &thread, nil,
            { raw in
                let body = Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue()
                sw_set_thread_name(body.name)
                body.run()
                return nil
            }, box.toOpaque())
        return thread
    }

    final class Body: Sendable {
        let name: String
        let run: @Sendable () -> Void
        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }

    func slots() -> [sw_loop_slot] { (0..<sw_loop_slot_count()).compactMap { sw_loop_slot_at($0)?.pointee } }

    /// The thread's own ticks read a slot as their callout clock: its first words must be one.
    @Test func aSlotBeginsWithACalloutClock() {
        #expect(
            MemoryLayout<sw_loop_slot>.offset(of: \.sequence) == MemoryLayout<sw_callout_clock>.offset(of: \.sequence))
        #expect(
            MemoryLayout<sw_loop_slot>.offset(of: \.start) == MemoryLayout<sw_callout_clock>.offset(of: \.start_cycles))
        #expect(MemoryLayout<sw_loop_slot>.offset(of: \.tid)! >= MemoryLayout<sw_callout_clock>.size)
    }

    @Test func aPoolThreadsFirstJobGivesItASlotAndEachJobIsAnItem() {
        sw_loop_reset_for_testing()
        let seen = Locked<[UInt64]>([])
        onThread(named: "pool-a") {
            for _ in 0..<3 {
                let slot = sw_dispatch_item_begin(Self.job)
                seen.withLock { $0.append(slot?.pointee.sequence ?? 0) }
                // A job run inside a job (inline) is part of it: not an item of its own.
                #expect(sw_dispatch_item_begin(Self.job) == nil)
                sw_dispatch_item_end(slot)
            }
        }
        #expect(seen.withLock { $0 } == [1, 3, 5])
        let all = slots()
        #expect(all.count == 1)
        #expect(all.first?.kind == Int32(SW_LOOP_JOBS.rawValue))
        #expect(all.first?.sequence == 6)
        #expect(all.first?.nameText == "pool-a")
    }

    @Test func aJobLongerThanTheBudgetIsLoggedWithItsStartAndEnd() throws {
        sw_loop_reset_for_testing()
        let slotIndex = Locked<UnsafeMutablePointer<sw_loop_slot>?>(nil)
        onThread(named: "pool-b") {
            let first = sw_dispatch_item_begin(Self.job)
            sw_dispatch_item_end(first)
            if let first { sw_loop_set_budget(first, Self.budget) }
            let slot = sw_dispatch_item_begin(Self.job)
            Self.runPastTheBudget()
            sw_dispatch_item_end(slot)
            let short = sw_dispatch_item_begin(Self.job)
            sw_dispatch_item_end(short)
            slotIndex.withLock { $0 = slot }
        }
        let slot = try #require(slotIndex.withLock { $0 })
        var cursor: UInt64 = 0
        var lost: UInt64 = 0
        var entries = [sw_loop_overrun](repeating: sw_loop_overrun(), count: Int(SW_LOOP_OVERRUNS))
        let count = sw_loop_read_overruns(slot, &cursor, &entries, &lost)
        #expect(count == 1 && lost == 0)
        #expect(entries[0].sequence == 3)
        // The log holds the item's own stamps: longer than the budget, ending where the slot's
        // last finished item ended (the short one after it ended later).
        #expect(entries[0].end - entries[0].start > Self.budget, "\(entries[0])")
        #expect(sw_loop_last_end(slot) >= entries[0].end)
    }

    @Test func aNewPoolThreadsFirstJobIsLoggedBeforeTheWatchdogEverLookedAtItsSlot() throws {
        sw_loop_reset_for_testing()
        sw_loop_set_default_budget(Self.budget)
        defer { sw_loop_set_default_budget(0) }
        onThread(named: "pool-new") {
            let slot = sw_dispatch_item_begin(Self.job)
            Self.runPastTheBudget()
            sw_dispatch_item_end(slot)
        }
        let slot = try #require(sw_loop_slot_at(0))
        #expect(sw_loop_overrun_head(slot) == 1)
    }

    @Test func aPoolThreadsSlotPassesToTheNextPoolThreadWhenItExits() throws {
        sw_loop_reset_for_testing()
        let tids = Locked<[Int32]>([])
        for name in ["pool-c", "pool-d"] {
            onThread(named: name) {
                tids.withLock { $0.append(sw_gettid()) }
                sw_dispatch_item_end(sw_dispatch_item_begin(Self.job))
            }
        }
        // One slot, now the second thread's, with one more owner than at first.
        #expect(sw_loop_slot_count() == 1)
        let slot = try #require(sw_loop_slot_at(0))
        #expect(slot.pointee.ready == UInt32(SW_SLOT_FREE))
        #expect(slot.pointee.tid == tids.withLock { $0 }.last)
        #expect(slot.pointee.generation == 1)
        #expect(slot.pointee.nameText == "pool-d")
        var generation: UInt64 = 0
        var tid: Int32 = 0
        #expect(sw_loop_owner(slot, &generation, &tid) == 0, "a free slot has no owner")
    }

    @Test func aPoolThreadThatExitsInTheMiddleOfAJobLeavesItsSlotBetweenItems() throws {
        sw_loop_reset_for_testing()
        onThread(named: "pool-exit") {
            _ = sw_dispatch_item_begin(Self.job)  // never ended: the thread leaves inside the job
        }
        let slot = try #require(sw_loop_slot_at(0))
        #expect(slot.pointee.ready == UInt32(SW_SLOT_FREE))
        #expect(slot.pointee.sequence == 2, "the job ended when its thread did")
        let begun = Locked<Bool>(false)
        onThread(named: "pool-next") {
            let next = sw_dispatch_item_begin(Self.job)
            begun.withLock { $0 = next != nil }
            sw_dispatch_item_end(next)
        }
        #expect(begun.withLock { $0 }, "the next pool thread times its jobs in the slot")
    }

    @Test func poolThreadsLeaveSlotsForLoopsAndSayWhenOneFoundNone() throws {
        sw_loop_reset_for_testing()
        // One more pool thread than pool threads may have slots, all inside a job at once.
        let threads = Int(SW_LOOP_SLOTS) - 16 + 1
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let timed = Locked<Int>(0)
        let running = (0..<threads).map { _ in
            start(named: "pool-many") {
                let slot = sw_dispatch_item_begin(Self.job)
                if slot != nil { timed.withLock { $0 += 1 } }
                started.signal()
                release.wait()
                sw_dispatch_item_end(slot)
            }
        }
        for _ in 0..<threads { started.wait() }
        #expect(timed.withLock { $0 } == threads - 1)
        #expect(sw_dispatch_jobs_refused() == 1)
        #expect(sw_loop_slot_count() == UInt32(threads - 1))
        for _ in 0..<threads { release.signal() }
        // Joined: their thread-exit keys have run before the next test empties the registry.
        for thread in running { pthread_join(thread, nil) }
    }

    @Test func theMainQueueIsOneSlotWhoseItemsNameTheThreadThatRanThem() throws {
        sw_loop_reset_for_testing()
        let tids = Locked<[Int32]>([])
        for name in ["worker-1", "worker-2"] {
            onThread(named: name) {
                let slot = sw_dispatch_item_begin(Self.mainQueue)
                tids.withLock { $0.append(slot?.pointee.tid ?? 0) }
                #expect(slot?.pointee.tid == sw_gettid())
                sw_dispatch_item_end(slot)
            }
        }
        #expect(sw_loop_slot_count() == 1)
        let slot = try #require(sw_loop_slot_at(0))
        #expect(slot.pointee.kind == Int32(SW_LOOP_MAIN_QUEUE.rawValue))
        #expect(slot.pointee.sequence == 4)
        #expect(Set(tids.withLock { $0 }).count == 2)
        #expect(sw_loop_last_end(slot) >= slot.pointee.start)
    }

    /// Once the preload library has wrapped a pool job, the pool's threads are the threads that
    /// ran one: a starvation before any job began samples no thread, not the threads named like
    /// the pool's (sourcekit-lsp's trace writer, started from a default-pool worker, has that
    /// name for its first moments, and a recorded session sampled it so:
    /// `PoolPreloadTests.sourceKitLSPsPoolStallsSampleOnlyThreadsThatRunSwiftJobs`, once in about
    /// 15 runs). This process has no trampolines: the jobs that starve its pool begin no item.
    @Test(.timeLimit(.minutes(1)))
    func beforeAnyJobBeganAStarvationSamplesNoThreadNamedLikeThePool() async throws {
        sw_loop_reset_for_testing()
        defer { sw_loop_reset_for_testing() }
        sw_dispatch_note_job_wrapped()
        // A thread named like the pool's threads that runs no job: it computes (as the trace
        // writer does at its start), so it is not skipped as a pool thread parked idle.
        let impostor = Locked<Int32>(0)
        let named = DispatchSemaphore(value: 0)
        let done = Locked(false)
        let thread = start(named: PoolThreads.defaultName) {
            impostor.withLock { $0 = sw_gettid() }
            named.signal()
            while !done.withLock({ $0 }) { spinForStallTest(milliseconds: 1) }
        }
        defer {
            done.withLock { $0 = true }
            pthread_join(thread, nil)
        }
        named.wait()
        var configuration = HeartbeatMonitor.Configuration()
        configuration.budget = .milliseconds(20)
        let monitor = HeartbeatMonitor(configuration: configuration)
        let pool = monitor.watchConcurrencyPool()
        monitor.watchEventLoops()
        let ended = Locked<[Stall]>([])
        monitor.onStallEnded = { stall in ended.withLock { $0.append(stall) } }
        try monitor.start()
        defer { monitor.stop() }
        #expect(await Waiter().eventually { pool.heartbeatsRun > 0 })
        // Three blocking jobs per pool thread, then one that says how long it waited to start:
        // the pool starved for about 300 ms.
        let width = ProcessInfo.processInfo.activeProcessorCount
        for _ in 0..<(3 * width) { Task.detached { blockPoolThreadForTest(milliseconds: 100) } }
        let queued = ContinuousClock.now
        let waited = await Task.detached { ContinuousClock.now - queued }.value
        #expect(waited > .milliseconds(100), "the pool was not starved: a job waited \(waited) to start")
        // No stall is expected: with no thread that ran a job, the pool has no thread to sample and
        // a starvation begins no stall (`stepPool`). A wrong one (of the impostor, found by its
        // name) would have begun at a look during the starvation; `stop()` delivers a stall still
        // in progress. The wait is for the watchdog's own progress, not for time: 20 more looks,
        // or its park once the pool is idle, so a late watchdog is waited for, not missed.
        let before = monitor.statistics
        #expect(
            await Waiter().eventually {
                let now = monitor.statistics
                return now.watchdogWakeups >= before.watchdogWakeups + 20 || now.poolParks > before.poolParks
            })
        monitor.stop()
        let sampled = ended.withLock { $0 }.filter { $0.callout.label == HeartbeatMonitor.poolLabel }
            .flatMap(\.samples).map(\.tid)
        #expect(sw_dispatch_jobs_refused() == 0 && sw_loop_slot_count() == 0)
        #expect(
            sampled.isEmpty,
            "no thread ran a job, yet \(sampled.count) samples of threads \(Set(sampled).sorted()) (impostor \(impostor.withLock { $0 }))"
        )
    }

    @Test func aMainQueueItemInsideAnIterationOfItsThreadsLoopIsTheIterations() {
        sw_loop_reset_for_testing()
        let epfd = epoll_create1(0)
        defer { close(epfd) }
        let nested = Locked<Bool>(false)
        onThread(named: "runloop") {
            Waits.epoll(epfd, timeoutMs: 1)  // a loop from its first blocking wait
            // After the wait's return: inside an iteration, as RunLoop drains the main queue.
            nested.withLock { $0 = sw_dispatch_item_begin(Self.mainQueue) == nil }
            Waits.epoll(epfd, timeoutMs: 0)
            sw_loop_forget_thread_for_testing()
        }
        #expect(nested.withLock { $0 })
        #expect(slots().map(\.kind) == [Int32(SW_LOOP_EPOLL.rawValue)])
    }
}

extension sw_loop_slot {
    /// The name, up to its NUL.
    var nameText: String {
        withUnsafeBytes(of: name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
