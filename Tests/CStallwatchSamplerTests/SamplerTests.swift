// The sampler's own tests, driving CStallwatchSampler's C API directly (no StallMonitor):
// install and its refusals, captures of a spinning thread (frames, timings, errno), the
// timeout on a thread blocked in a syscall and its stale signal, the late handler that
// finds its capture abandoned, foreign signals, preparing a thread, the unwinder owner, and
// the counters behind all of them.
//
// Under ThreadSanitizer the tests that capture a thread running its own code are skipped: TSan
// installs its own handler in front of ours and, unless the thread is inside an intercepted
// blocking call, runs ours later, at the thread's next intercepted call, with a copy of the
// context: the stack unwound there is not the interrupted one (and a pure spin loop, which
// calls nothing, never gets it). Threads waiting in read() get the signal at once and stay tested.
//
// The sampler is process-wide state (one signal, one slot, counters since install), and the
// StallMonitor tests in the same test process install it too. So each test here runs in a
// fresh child process (a Swift Testing exit test): it starts uninstalled and the counters it
// checks are its own, whatever runs before it or in parallel.
import CStallwatchSampler
import CStallwatchTestSupport
import Glibc
import StallwatchTestSupport
import Testing

@Suite struct SamplerTests {
    @Test func installRefusesWhatItCannotUseAndIsIdempotent() async {
        let child = ExitTestErrors()
        let result = await #expect(processExitsWith: .success) { [path = child.path as String] in
            sendStandardError(to: path)
            checkInstall()
        }
        child.check(result)
    }

    @Test(.disabled(if: Sanitizer.thread, "TSan defers the signal of a running thread to its next intercepted call"))
    func capturesASpinningThreadExactly() async {
        let child = ExitTestErrors()
        let result = await #expect(processExitsWith: .success) { [path = child.path as String] in
            sendStandardError(to: path)
            checkSpinningCaptures()
        }
        child.check(result)
    }

    @Test(.disabled(if: Sanitizer.thread, "TSan defers the signal of a running thread to its next intercepted call"))
    func aThreadBlockedInASyscallTimesOutAndItsStaleSignalIsIgnored() async {
        let child = ExitTestErrors()
        let result = await #expect(processExitsWith: .success) { [path = child.path as String] in
            sendStandardError(to: path)
            checkTimeoutAndStaleSignal()
        }
        child.check(result)
    }

    @Test func aPreparedThreadWaitingInReadIsCapturedAndItsReadRestarts() async {
        let child = ExitTestErrors()
        let result = await #expect(processExitsWith: .success) { [path = child.path as String] in
            sendStandardError(to: path)
            checkThreadInRead()
        }
        child.check(result)
    }

    @Test(.disabled(if: Sanitizer.thread, "TSan defers the signal of a running thread to its next intercepted call"))
    func aLateHandlerKeepsTheSlotUntilItFinishesAndIsCounted() async {
        let child = ExitTestErrors()
        let result = await #expect(processExitsWith: .success) { [path = child.path as String] in
            sendStandardError(to: path)
            checkLateHandler()
        }
        child.check(result)
    }

    @Test(.disabled(if: Sanitizer.thread, "TSan defers the signal of a running thread to its next intercepted call"))
    func foreignAndForgedSignalsAreIgnored() async {
        let child = ExitTestErrors()
        let result = await #expect(processExitsWith: .success) { [path = child.path as String] in
            sendStandardError(to: path)
            checkForeignSignals()
        }
        child.check(result)
    }

    @Test(.disabled(if: Sanitizer.thread, "TSan defers the signal of a running thread to its next intercepted call"))
    func preparingAThreadUnblocksTheSignal() async {
        let child = ExitTestErrors()
        let result = await #expect(processExitsWith: .success) { [path = child.path as String] in
            sendStandardError(to: path)
            checkPrepareUnblocks()
        }
        child.check(result)
    }

    // ASan's runtime defines _Unwind_RaiseException itself (its interceptor, in the test
    // executable), so the global lookup names the executable, not libgcc_s, whatever we do.
    @Test(.disabled(if: Sanitizer.address, "under ASan the runtime's own _Unwind_RaiseException interceptor wins"))
    func theProcessKeepsItsOwnUnwinder() async {
        let child = ExitTestErrors()
        let result = await #expect(processExitsWith: .success) { [path = child.path as String] in
            sendStandardError(to: path)
            checkUnwinderOwner()
        }
        child.check(result)
    }

    @Test func theSanitizerFlagsMatchTheRuntime() {
        // The skip conditions above and in StallwatchTests rest on these compile-time flags.
        #expect(Sanitizer.address == (dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil))
        #expect(Sanitizer.thread == (dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil))
    }
}

// MARK: - Checks (each runs in its own child process)

func checkInstall() {
    let signal = sw_sampler_default_signal()
    childExpect(signal == swt_sigrtmin() + 4)
    childExpect(sw_sampler_installed_signal() == 0)
    childExpect(sw_sampler_libunwind_path() == nil)
    var frames = [UInt](repeating: 0, count: 8)
    childExpect(sw_sampler_capture(swt_gettid(), &frames, 8, 1_000_000, nil) == SW_SAMPLER_ENOTINSTALLED)
    childExpect(sw_sampler_prepare_thread() == SW_SAMPLER_ENOTINSTALLED)

    // Only real-time signals.
    childExpect(sw_sampler_install(SIGUSR1) == SW_SAMPLER_EINVAL)
    childExpect(sw_sampler_install(swt_sigrtmax() + 1) == SW_SAMPLER_EINVAL)
    // A signal somebody else handles or ignores is theirs.
    let taken = swt_sigrtmin() + 6
    childExpect(swt_ignore_signal(taken, 1) == 0)
    childExpect(sw_sampler_install(taken) == SW_SAMPLER_EINUSE)
    childExpect(swt_ignore_signal(taken, 0) == 0)
    childExpect(sw_sampler_installed_signal() == 0)

    childExpect(sw_sampler_install(signal) == SW_SAMPLER_OK)
    childExpect(sw_sampler_installed_signal() == signal)
    childExpect(sw_sampler_install(signal) == SW_SAMPLER_OK)
    childExpect(sw_sampler_install(swt_sigrtmin() + 5) == SW_SAMPLER_EALREADY)
    let path = sw_sampler_libunwind_path().map { String(cString: $0) }
    childExpect(path?.contains("libunwind.so.8") == true, "\(path ?? "nil")")
    // libunwind was loaded RTLD_LOCAL: nothing of it is in the global scope.
    childExpect(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "unw_backtrace") == nil)

    // Bad arguments, and a thread that does not exist (pid_max is far below Int32.max).
    var result = sw_capture_result()
    childExpect(sw_sampler_capture(0, &frames, 8, 1_000_000, &result) == SW_SAMPLER_EINVAL)
    childExpect(sw_sampler_capture(swt_gettid(), nil, 8, 1_000_000, nil) == SW_SAMPLER_EINVAL)
    childExpect(sw_sampler_capture(swt_gettid(), &frames, 0, 1_000_000, nil) == SW_SAMPLER_EINVAL)
    childExpect(sw_sampler_capture(swt_gettid(), &frames, 8, -1, nil) == SW_SAMPLER_EINVAL)
    childExpect(sw_sampler_capture(Int32.max, &frames, 8, 1_000_000, &result) == SW_SAMPLER_ENOTHREAD)
    childExpect(result.sys_errno == ESRCH)
    childExpect(result.frame_count == 0)

    // Every code has its own text.
    let codes: [Int32] = [
        SW_SAMPLER_OK, SW_SAMPLER_EINVAL, SW_SAMPLER_EINUSE, SW_SAMPLER_EALREADY, SW_SAMPLER_ENOUNWIND,
        SW_SAMPLER_ENOTINSTALLED, SW_SAMPLER_ESEND, SW_SAMPLER_ENOTHREAD, SW_SAMPLER_ETIMEDOUT,
        SW_SAMPLER_EBUSY, SW_SAMPLER_ESYS,
    ]
    childExpect(Set(codes.map { String(cString: sw_sampler_strerror($0)) }).count == codes.count)
    childExpect(String(cString: sw_sampler_strerror(-99)) == "unknown error")

    // Nothing was sent: only the failed sends above, which count as nothing.
    childExpect(samplerStats().captures == 0)
}

func checkSpinningCaptures() {
    let signal = installSampler()
    let target = startTarget(SWT_TARGET_SPIN_PREPARED, signal)
    defer { swt_target_free(target) }
    let tid = swt_target_tid(target)
    childExpect(swt_target_prepare_rc(target) == tid)
    // prepare_thread captured the thread once, through the real handler.
    childExpect(samplerStats().captures == 1 && samplerStats().completed == 1)

    let inner = swt_address_of_spin_inner()
    let outer = swt_address_of_spin_outer()
    var lastRequest: UInt64 = 0
    let rounds = 200
    for round in 0..<rounds {
        let capture = Capture(tid, timeout: .seconds(2))
        guard capture.code > 0 else {
            Issue.record("capture \(round): \(capture.code) \(String(cString: sw_sampler_strerror(capture.code)))")
            return
        }
        let r = capture.result
        // Frame 0 is the interrupted instruction (inside the spin), frame 1 the return address
        // into its caller; the handler's own frames and the signal trampoline are gone.
        guard capture.frames.count >= 2 else {
            Issue.record("capture \(round): \(capture.frames)")
            continue
        }
        childExpect(capture.frames[0] >= inner && capture.frames[0] < inner + 512, "\(capture.frames)")
        childExpect(capture.frames[1] - 1 >= outer && capture.frames[1] - 1 < outer + 512, "\(capture.frames)")
        childExpect(r.handler_frames == 2)
        childExpect(r.frame_count == capture.code && r.timed_out == 0 && r.late_handler == 0 && r.truncated == 0)
        // The thread's outermost frames are libc's (start_thread, clone3).
        childExpect(capture.frames.suffix(2).allSatisfy { objectName($0)?.contains("libc.so") == true })
        // Request ids are fresh multiples of 4; the timings are in order.
        childExpect(r.request_id % 4 == 0 && r.request_id > lastRequest)
        lastRequest = r.request_id
        childExpect(
            r.sent_ns > 0 && r.sent_ns <= r.handler_ns && r.handler_ns <= r.ready_ns && r.ready_ns <= r.woken_ns)
        if round % 50 == 0 { usleep(1_000) }  // let the thread spin a little between some captures
    }

    // A capacity smaller than the stack: the innermost frames, flagged truncated.
    let short = Capture(tid, capacity: 2, timeout: .seconds(2))
    childExpect(short.code == 2 && short.result.truncated == 1)
    childExpect(short.frames.first.map { $0 >= inner && $0 < inner + 512 } == true)

    let stats = samplerStats()
    childExpect(stats.captures == UInt64(rounds + 2) && stats.completed == UInt64(rounds + 2))
    childExpect(stats.timeouts == 0 && stats.stale_signals == 0 && stats.late_completions == 0)
    childExpect(stats.foreign_signals == 0)
    // errno as the thread set it, although every capture ran a handler on it.
    swt_target_stop(target)
    childExpect(swt_target_errno_intact(target) == 1)
}

func checkTimeoutAndStaleSignal() {
    let signal = installSampler()
    let spinner = startTarget(SWT_TARGET_SPIN_PREPARED, signal)
    defer { swt_target_free(spinner) }
    let before = samplerStats()

    /// Times out `count` captures of a thread blocked in read() with the sampling signal
    /// blocked: its handler cannot run, so each capture is revoked and leaves a queued signal.
    func timeOut(_ blocked: OpaquePointer, _ count: Int) {
        for _ in 0..<count {
            let start = MonotonicClock.nanos()
            let capture = Capture(swt_target_tid(blocked), timeout: .milliseconds(20))
            let waited = MonotonicClock.nanos() - start
            childExpect(capture.code == SW_SAMPLER_ETIMEDOUT)
            childExpect(capture.result.timed_out == 1 && capture.result.late_handler == 0)
            childExpect(capture.result.frame_count == 0 && capture.result.handler_ns == 0)
            childExpect(waited >= 20_000_000, "returned after \(waited) ns")
        }
    }

    // 1. The stale signals arrive before any other capture: the last request was revoked at
    //    its timeout, so not even its own handler may claim the slot.
    let first = startTarget(SWT_TARGET_BLOCKED_IN_READ, signal)
    timeOut(first, 3)
    swt_target_free(first)  // unblocks the signal: the 3 queued handlers run now
    let revoked = samplerStats()
    childExpect(revoked.stale_signals - before.stale_signals == 3)
    childExpect(revoked.completed == before.completed)
    expectSpinning(Capture(swt_target_tid(spinner), timeout: .seconds(2)))

    // 2. The stale signals arrive while this thread keeps capturing another thread: they find
    //    the slot armed for other ids and leave it alone; every capture stays correct.
    let second = startTarget(SWT_TARGET_BLOCKED_IN_READ, signal)
    defer { swt_target_free(second) }
    timeOut(second, 3)
    let stopper = PThread { swt_target_stop(second) }
    var good = 0
    for _ in 0..<100 where expectSpinning(Capture(swt_target_tid(spinner), timeout: .seconds(2))) {
        good += 1
    }
    stopper.join()
    childExpect(good == 100)

    let after = samplerStats()
    childExpect(after.timeouts - before.timeouts == 6)
    childExpect(after.stale_signals - before.stale_signals == 6)
    childExpect(after.late_completions == before.late_completions)
    childExpect(after.completed - before.completed == 101)
}

func checkThreadInRead() {
    let signal = installSampler()
    let target = startTarget(SWT_TARGET_PREPARED_IN_READ, signal)
    usleep(20_000)  // let it reach read()
    for _ in 0..<20 {
        let capture = Capture(swt_target_tid(target), timeout: .seconds(2))
        childExpect(capture.code > 0)
        // Frame 0 is in libc (the read syscall wrapper), and the thread's own function is below.
        childExpect(capture.frames.first.flatMap(objectName)?.contains("libc.so") == true)
    }
    swt_target_stop(target)
    // SA_RESTART: the read was interrupted 20 times and never failed with EINTR.
    childExpect(swt_target_read_interrupted(target) == 0)
    swt_target_free(target)
}

func checkLateHandler() {
    let signal = installSampler()
    // Spins in code no unwind has seen yet, so the handler must look its unwind info up, which
    // takes the dynamic loader's lock (dl_iterate_phdr). Another thread holds that lock: the
    // handler claims the slot and then waits (the "another thread holds it" risk in
    // docs/sampler-notes.md), past the capture's timeout.
    let target = startTarget(SWT_TARGET_SPIN_FRESH, signal)
    defer { swt_target_free(target) }
    let tid = swt_target_tid(target)
    let before = samplerStats()

    let lock = swt_loader_lock_hold()
    // 500 ms for the handler to be scheduled and claim the slot (with 50 ms, a loaded 2-core
    // machine sometimes ran it later, after the timeout, where this test needs it blocked);
    // once it has, it waits on the lock held here, so it is late whatever the timeout.
    let late = Capture(tid, timeout: .milliseconds(500))
    usleep(10_000)
    let busy = Capture(tid, timeout: .milliseconds(50))
    swt_loader_lock_release(lock)

    // The handler had claimed the slot: ETIMEDOUT with late_handler, and the slot stays the
    // handler's (EBUSY, nothing sent) until it publishes its result.
    childExpect(late.code == SW_SAMPLER_ETIMEDOUT)
    childExpect(late.result.timed_out == 1 && late.result.late_handler == 1)
    childExpect(busy.code == SW_SAMPLER_EBUSY && busy.result.sent_ns == 0)

    // Once released, the late handler finishes and the next capture is correct.
    var next = Capture(tid, timeout: .seconds(2))
    let giveUp = MonotonicClock.nanos() + 5_000_000_000
    while next.code == SW_SAMPLER_EBUSY && MonotonicClock.nanos() < giveUp {
        usleep(1_000)
        next = Capture(tid, timeout: .seconds(2))
    }
    childExpect(next.code > 0)
    let fresh = swt_address_of_spin_fresh_inner()
    childExpect(next.frames.first.map { $0 >= fresh && $0 < fresh + 512 } == true, "\(next.frames)")

    let after = samplerStats()
    childExpect(after.timeouts - before.timeouts == 1)
    childExpect(after.late_completions - before.late_completions == 1)
    childExpect(after.stale_signals == before.stale_signals)
    // Sends: the late one and the good one (EBUSY sent nothing).
    childExpect(after.captures - before.captures == 2)
}

func checkForeignSignals() {
    let signal = installSampler()
    let target = startTarget(SWT_TARGET_SPIN_PREPARED, signal)
    defer { swt_target_free(target) }
    let tid = swt_target_tid(target)
    let before = samplerStats()

    // Plain tgkill (SI_TKILL), then SI_QUEUE with ids the sampler never issues (0, low bits set).
    childExpect(swt_send_tkill(tid, signal) == 0)
    childExpect(swt_send_queued(tid, signal, 0) == 0)
    childExpect(swt_send_queued(tid, signal, 4 * 1_000_000 + 3) == 0)
    childExpect(eventually { samplerStats().foreign_signals - before.foreign_signals == 3 })
    // A well-formed id nobody is waiting for: stale, ignored.
    childExpect(swt_send_queued(tid, signal, 4 * 1_000_000) == 0)
    childExpect(eventually { samplerStats().stale_signals - before.stale_signals == 1 })

    // The thread is alive (the signal's default action would have killed the process) and the
    // slot untouched.
    expectSpinning(Capture(tid, timeout: .seconds(2)))
    let after = samplerStats()
    childExpect(after.completed - before.completed == 1)
    childExpect(after.foreign_signals - before.foreign_signals == 3)
}

func checkPrepareUnblocks() {
    let signal = installSampler()
    // Blocks the signal, as threads made by libdispatch and Swift Testing do.
    let target = startTarget(SWT_TARGET_SPIN_UNPREPARED, signal)
    defer { swt_target_free(target) }
    let tid = swt_target_tid(target)
    let before = samplerStats()

    let blocked = Capture(tid, timeout: .milliseconds(20))
    childExpect(blocked.code == SW_SAMPLER_ETIMEDOUT && blocked.result.late_handler == 0)

    childExpect(swt_target_prepare_now(target) == tid)
    // Unblocking delivered the timed-out capture's queued signal (stale), then prepare's own
    // capture completed.
    let prepared = samplerStats()
    childExpect(prepared.stale_signals - before.stale_signals == 1)
    childExpect(prepared.completed - before.completed == 1)

    expectSpinning(Capture(tid, timeout: .seconds(2)))
}

func checkUnwinderOwner() {
    func owner() -> String? { sw_sampler_unwinder_owner().map { String(cString: $0) } }
    childExpect(owner()?.contains("libgcc_s") == true, "before install: \(owner() ?? "nil")")
    _ = installSampler()
    let target = startTarget(SWT_TARGET_PREPARED_IN_READ, sw_sampler_default_signal())
    childExpect(Capture(swt_target_tid(target), timeout: .seconds(2)).code > 0)
    swt_target_free(target)
    // Loading libunwind for the handler did not replace the process's C++/Swift unwinder.
    childExpect(owner()?.contains("libgcc_s") == true, "after install: \(owner() ?? "nil")")
}

// MARK: - Helpers

/// One sw_sampler_capture call.
struct Capture {
    var code: Int32
    var result = sw_capture_result()
    var frames: [UInt] = []

    init(_ tid: Int32, capacity: Int = 64, timeout: Duration) {
        var buffer = [UInt](repeating: 0, count: capacity)
        var result = sw_capture_result()
        let nanos = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        code = sw_sampler_capture(tid, &buffer, Int32(capacity), nanos, &result)
        self.result = result
        frames = Array(buffer.prefix(Int(max(0, result.frame_count))))
    }
}

/// Whether `capture` is a correct capture of a thread spinning in swt_spin_inner.
@discardableResult
func expectSpinning(_ capture: Capture, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    let inner = swt_address_of_spin_inner()
    let ok =
        capture.code > 0 && capture.result.timed_out == 0 && !capture.frames.isEmpty
        && capture.frames[0] >= inner && capture.frames[0] < inner + 512
    childExpect(ok, "code \(capture.code), frames \(capture.frames)", sourceLocation: sourceLocation)
    return ok
}

func installSampler() -> Int32 {
    let signal = sw_sampler_default_signal()
    let code = sw_sampler_install(signal)
    precondition(code == SW_SAMPLER_OK, "install: \(String(cString: sw_sampler_strerror(code)))")
    return signal
}

func startTarget(_ kind: swt_target_kind, _ signal: Int32) -> OpaquePointer {
    guard let target = swt_target_start(kind, signal) else { preconditionFailure("cannot start a test thread") }
    return target
}

func samplerStats() -> sw_sampler_stats {
    var stats = sw_sampler_stats()
    sw_sampler_get_stats(&stats)
    return stats
}

func objectName(_ address: UInt) -> String? {
    swt_object_of(address).map { String(cString: $0) }
}

enum MonotonicClock {
    static func nanos() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}

/// A plain pthread running `body` (not a Swift Testing or libdispatch thread).
final class PThread {
    private var thread = pthread_t()

    init(_ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { raw in
                let body = Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue()
                body.run()
                return nil
            }, box)
        precondition(created == 0)
    }

    func join() { pthread_join(thread, nil) }

    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }
}
