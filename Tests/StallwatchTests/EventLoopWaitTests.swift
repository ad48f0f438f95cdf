// Event loops found by their waits (sw_loop_slot.h): what the preload library's interposed
// epoll_wait, poll and select do around the real call, done here by hand around real waits on
// real descriptors, and the monitor that times the iterations.
import CStallwatchShims
import Foundation
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

/// A thread's waits, with the bookkeeping the interposed calls do.
enum Waits {
    static func epoll(_ epfd: Int32, timeoutMs: Int32) {
        var event = epoll_event()
        sw_loop_wait_begin(Int32(SW_LOOP_EPOLL.rawValue), 0, epfd, timeoutMs != 0 ? 1 : 0, 0)
        _ = epoll_wait(epfd, &event, 1, timeoutMs)
        sw_loop_wait_end(Int32(SW_LOOP_EPOLL.rawValue), 0, epfd)
    }

    static func poll(_ fd: Int32, timeoutMs: Int32) {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        withUnsafeMutablePointer(to: &entry) { pointer in
            let set = UInt64(UInt(bitPattern: pointer))
            sw_loop_wait_begin(Int32(SW_LOOP_POLL.rawValue), set, fd, timeoutMs != 0 ? 1 : 0, 0)
            _ = Glibc.poll(pointer, 1, timeoutMs)
            sw_loop_wait_end(Int32(SW_LOOP_POLL.rawValue), set, fd)
        }
    }
}

/// The registry is the process's: these suites run one at a time (`.serialized`), and each test
/// starts from an empty one on a thread of its own.
@Suite(.serialized) struct EventLoopWaitTests {
    /// Runs `body` on a new thread (its loop state is its own) and waits for it.
    func onThread(named name: String = "test-loop", _ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            // Named here: a thread inherits its creator's name (a pool thread's) until it sets one.
            sw_set_thread_name(name)
            body()
            done.signal()
        }
        thread.start()
        done.wait()
    }

    func makePipe() -> [Int32] {
        var ends: [Int32] = [0, 0]
        Glibc.pipe(&ends)
        return ends
    }

    func slot(_ index: UInt32 = 0) -> sw_loop_slot? { sw_loop_slot_at(index)?.pointee }

    @Test func aBlockingEpollWaitMakesALoopWhoseIterationsRunBetweenWaits() throws {
        sw_loop_reset_for_testing()
        let epfd = epoll_create1(0)
        defer { close(epfd) }
        onThread(named: "epoll-loop") {
            Waits.epoll(epfd, timeoutMs: 1)
        }
        let first = try #require(slot())
        #expect(sw_loop_slot_count() == 1)
        #expect(first.kind == Int32(SW_LOOP_EPOLL.rawValue))
        #expect(first.fd == epfd)
        #expect(
            withUnsafeBytes(of: first.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) } == "epoll-loop")
        // The wait returned: an iteration runs.
        #expect(first.sequence == 1)
    }

    @Test func aWaitOnAnotherSetInsideAnIterationIsPartOfIt() throws {
        sw_loop_reset_for_testing()
        let epfd = epoll_create1(0)
        let pipe = makePipe()
        defer { for fd in [epfd, pipe[0], pipe[1]] { close(fd) } }
        let sequences = Locked<[UInt64]>([])
        onThread {
            Waits.epoll(epfd, timeoutMs: 1)
            // A client library waiting for its socket, twice, inside the iteration.
            Waits.poll(pipe[0], timeoutMs: 1)
            Waits.poll(pipe[0], timeoutMs: 1)
            sequences.withLock { $0.append(sw_loop_slot_at(0)!.pointee.sequence) }
            Waits.epoll(epfd, timeoutMs: 0)  // the loop goes round without blocking: still a boundary
            sequences.withLock { $0.append(sw_loop_slot_at(0)!.pointee.sequence) }
        }
        #expect(sequences.withLock { $0 } == [1, 3])
        #expect(slot()?.nested == 2)
        #expect(sw_loop_slot_count() == 1)
    }

    /// Off the main thread a poll is a client waiting for its socket or a pipe, from the same
    /// stack frame again and again (a pool thread of `swift build` looked like a loop whose last
    /// "iteration" was its next job): never a loop, however often. On the main thread (GLib's
    /// and Foundation's main loops), a poll set is a loop from its second blocking wait: the GLib
    /// program and each wrapped wait of `UnmodifiedLoopTests` show it on a real main thread.
    @Test func aPollOffTheMainThreadIsNeverALoop() {
        sw_loop_reset_for_testing()
        let pipe = makePipe()
        defer { for fd in pipe { close(fd) } }
        let counts = Locked<[UInt32]>([])
        onThread {
            for _ in 0..<4 {
                Waits.poll(pipe[0], timeoutMs: 1)
                counts.withLock { $0.append(sw_loop_slot_count()) }
            }
        }
        #expect(counts.withLock { $0 } == [0, 0, 0, 0])
    }

    @Test func aLoopWhoseDescriptorWasClosedMovesToItsNextSet() throws {
        sw_loop_reset_for_testing()
        let fds = Locked<[Int32]>([])
        onThread {
            // asyncio.run() twice: each run makes its own epoll descriptor and closes it.
            let first = epoll_create1(0)
            Waits.epoll(first, timeoutMs: 1)
            close(first)
            // A descriptor taken in between so the next epoll gets a new number.
            let filler = eventfd(0, 0)
            let second = epoll_create1(0)
            Waits.epoll(second, timeoutMs: 1)
            Waits.epoll(second, timeoutMs: 1)
            fds.withLock { $0 = [first, second, sw_loop_slot_at(0)!.pointee.fd] }
            close(second)
            close(filler)
        }
        let seen = fds.withLock { $0 }
        #expect(seen[2] == seen[1])
        #expect(sw_loop_slot_count() == 1)
        // The second loop's two waits: one iteration each, timed as usual.
        #expect(try #require(slot()).sequence & 1 == 1)
    }

    @Test func anIterationLongerThanTheBudgetIsLoggedWithItsOwnEnds() throws {
        sw_loop_reset_for_testing()
        let epfd = epoll_create1(0)
        defer { close(epfd) }
        let own = Locked<(start: UInt64, end: UInt64)>((0, 0))
        onThread {
            Waits.epoll(epfd, timeoutMs: 1)
            let slot = sw_loop_slot_at(0)!
            sw_loop_set_budget(slot, Timebase.shared.cycles(1_000_000))
            let start = sw_cycles()
            while sw_cycles() &- start < Timebase.shared.cycles(3_000_000) {}
            let end = sw_cycles()
            own.withLock { $0 = (start, end) }
            Waits.epoll(epfd, timeoutMs: 0)
        }
        let slot = try #require(sw_loop_slot_at(0))
        var cursor: UInt64 = 0
        var lost: UInt64 = 0
        var entries = [sw_loop_overrun](repeating: sw_loop_overrun(), count: Int(SW_LOOP_OVERRUNS))
        let count = sw_loop_read_overruns(slot, &cursor, &entries, &lost)
        #expect(count == 1 && lost == 0 && cursor == 1)
        let measured = own.withLock { $0 }
        #expect(entries[0].sequence == 1)
        // The iteration brackets the thread's own measurement (its stamps are taken just outside).
        #expect(entries[0].start <= measured.start && entries[0].end >= measured.end)
        // And ends right after it (its start also holds the Timebase's first use).
        #expect(Timebase.shared.duration(from: measured.end, to: entries[0].end) < 1_000_000)
    }

    /// The monitor end to end on a real epoll loop: a 60 ms iteration against the 16 ms budget is
    /// one stall, named by the loop's thread, timed by its own wait calls (within a millisecond of
    /// what the thread measured itself), with the spinning frame on its stack.
    @Test func theMonitorTimesALoopsLongIterationExactly() throws {
        sw_loop_reset_for_testing()
        let monitor = HeartbeatMonitor()
        let stalls = Locked<[Stall]>([])
        monitor.onStallEnded = { stall in stalls.withLock { $0.append(stall) } }
        monitor.watchEventLoops()
        try monitor.start()
        defer { monitor.stop() }
        let epfd = epoll_create1(0)
        let wake = eventfd(0, 0)
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(fd: wake))
        epoll_ctl(epfd, EPOLL_CTL_ADD, wake, &event)
        defer { for fd in [epfd, wake] { close(fd) } }
        let measured = Locked<UInt64>(0)
        let looping = Thread {
            sw_set_thread_name("nio-like-loop")
            for round in 0..<40 {
                Waits.epoll(epfd, timeoutMs: 5)
                if round == 20 {
                    let start = sw_monotonic_ns()
                    spinInLoopIteration(milliseconds: 60)
                    measured.withLock { $0 = sw_monotonic_ns() - start }
                }
            }
            Waits.epoll(epfd, timeoutMs: 5)
        }
        looping.start()
        #expect(eventually { stalls.withLock { !$0.isEmpty } })
        let stall = try #require(stalls.withLock { $0.first })
        #expect(stalls.withLock { $0.count } == 1)
        #expect(stall.callout.label == "nio-like-loop")
        #expect(stall.callout.mode == "epoll")
        let duration = try #require(stall.end) - stall.start
        let own = measured.withLock { $0 }
        #expect(duration >= own && duration - own < 1_000_000, "\(duration) vs \(own)")
        // TSan delivers the sampling signal late, away from the running culprit (its timing is
        // checked all the same).
        if !Sanitizer.thread {
            #expect(
                stall.samples.contains { $0.frames.contains { $0.symbol?.contains("spinInLoopIteration") == true } })
        }
    }
}

@inline(never)
func spinInLoopIteration(milliseconds: UInt64) {
    let end = sw_monotonic_ns() + milliseconds * 1_000_000
    while sw_monotonic_ns() < end {}
}
