// The stack scan of a thread parked in a system call gives the frames a signal-time unwind of
// the same thread gives (libunwind in the sampling handler, from the registers the kernel saved),
// frame for frame, the app's frames included.
import CStallwatchSampler
import CStallwatchShims
import CStallwatchTestSupport
import Dispatch
import Foundation
import Glibc
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct StackScannerTests {
    @Test func aThreadInDispatchQueueSyncOntoABusyQueue() throws {
        let queue = DispatchQueue(label: "scanner-test.busy")
        let gate = DispatchSemaphore(value: 0)
        let busy = DispatchSemaphore(value: 0)
        queue.async {
            busy.signal()
            gate.wait()
        }
        busy.wait()
        try compareScanWithSignal(parkedIn: "futex", app: "scannerProbeSync") {
            scannerProbeSync(queue)
        } release: {
            gate.signal()
        }
    }

    @Test func aThreadInPthreadMutexLock() throws {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        defer {
            pthread_mutex_destroy(mutex)
            mutex.deallocate()
        }
        // Held by this (synchronous) test's thread until the release.
        pthread_mutex_lock(mutex)
        let shared = UnsafeSendable(mutex)
        try compareScanWithSignal(parkedIn: "futex", app: "scannerProbeMutex") {
            scannerProbeMutex(shared.value)
        } release: {
            pthread_mutex_unlock(mutex)
        }
    }

    @Test func aThreadInReadOnAPipeNobodyWritesYet() throws {
        try compareReadOnAPipe(app: "scannerProbeRead") { scannerProbeRead($0) }
    }

    /// A frame that allocated on the stack (alloca) sits further above its SP than its prologue
    /// says, over stale frame records of calls it made before: RBP is still its own.
    @Test func aThreadInReadBelowAStackAllocation() throws {
        try compareReadOnAPipe(app: "scannerProbeReadBelowAllocation") { scannerProbeReadBelowAllocation($0) }
    }

    /// `compareScanWithSignal` for a thread that `read`s (in `app`, through `probe`) a pipe
    /// nobody writes until the comparison is done.
    private func compareReadOnAPipe(app: String, _ probe: @escaping @Sendable (Int32) -> Void) throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer {
            close(fds[0])
            close(fds[1])
        }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        try compareScanWithSignal(parkedIn: "read", app: app) {
            probe(readEnd)
        } release: {
            var byte: UInt8 = 1
            _ = write(writeEnd, &byte, 1)
        }
    }

    @Test func aThreadInDispatchSemaphoreWait() throws {
        let semaphore = DispatchSemaphore(value: 0)
        try compareScanWithSignal(parkedIn: "futex", app: "scannerProbeSemaphore") {
            scannerProbeSemaphore(semaphore)
        } release: {
            semaphore.signal()
        }
    }

    /// A thread that parks for a microsecond at a time, at a different depth each time, has its
    /// stack change under the scan: every scan still returns (no read outside the copy of the
    /// stack or a loaded object faults) and gives the PC first.
    @Test func aThreadThatKeepsWakingIsScannedWithoutFaults() throws {
        let stop = Locked(false)
        let thread = ParkedThread {
            var depth = 0
            while !stop.withLock({ $0 }) {
                scannerProbeRecurse(depth)
                depth = (depth + 7) % 40
            }
        }
        defer {
            stop.withLock { $0 = true }
            #expect(thread.join(), "the thread never returned")
        }
        let scanner = StackScanner(tid: thread.tid)
        var withStack = 0
        var deepest = 0
        for _ in 0..<3_000 {
            let frames = scanner.scan()
            if !frames.isEmpty { withStack += 1 }
            deepest = max(deepest, frames.count)
            #expect(frames.count <= Int(SW_SAMPLER_MAX_FRAMES))
        }
        print("scans with a stack: \(withStack) of 3000, deepest \(deepest) frames")
    }

    /// Parks a thread in `body` (in system call `syscall`), scans its stack, unwinds it by signal,
    /// scans it again, releases it and compares.
    private func compareScanWithSignal(
        parkedIn syscall: String, app: String, _ body: @escaping @Sendable () -> Void,
        release: () -> Void, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        try Sampler.install(signal: Sampler.defaultSignal)
        let number = try #require(SyscallTable.number(for: syscall))
        let thread = ParkedThread(body)
        var released = false
        defer { if !released { release() } }
        let parked = thread.waitUntilParked(in: number)
        try #require(parked, "the thread never parked in \(syscall)", sourceLocation: sourceLocation)
        let scanner = StackScanner(tid: thread.tid)
        let registers = thread.syscallLine()
        let scanned = scanner.scan()
        let unwind = scanner.lastUnwind
        let signalled = Sampler.capture(tid: thread.tid, timeoutNanos: 5_000_000_000)
        // Back in the call after the handler (the kernel restarted it), with the same registers.
        let stillParked = thread.waitUntilParked(in: number) && thread.syscallLine() == registers
        let again = scanner.scan()
        release()
        released = true
        #expect(thread.join(), "the thread never returned", sourceLocation: sourceLocation)
        // Under TSan the handler runs where TSan delivers it (its next interceptor), not where the
        // thread is parked: there is no signal-time stack of the parked thread to compare with.
        if Sanitizer.thread { return }

        try #require(!signalled.timedOut, "no signal-time stack", sourceLocation: sourceLocation)
        // The thread did not move meanwhile: the comparison is of one stack.
        try #require(stillParked && again == scanned, "the thread moved", sourceLocation: sourceLocation)
        let names = { (stack: [UInt64]) in
            Symbolicator.shared.symbolicate(stack).enumerated().map { index, frame in
                "\(index) 0x\(String(frame.address, radix: 16)) \(frame.symbol ?? "?")"
            }.joined(separator: "\n")
        }
        let rbp = ["unneeded", "prologue", "record", "unknown"][Int(unwind.rbp_source)]
        let context =
            "scan (RBP \(rbp), last step \(unwind.last_step), \(unwind.stack_bytes) bytes):\n\(names(scanned))"
            + "\nsignal:\n\(names(signalled.addresses))"
        print(context)
        try #require(!scanned.isEmpty && !signalled.addresses.isEmpty, "\(context)", sourceLocation: sourceLocation)
        // Frame 0 is the instruction after `syscall` as /proc shows it. The handler's is the
        // `syscall` instruction itself (2 bytes, 0F 05) when the kernel rewound the PC to restart
        // the call after the handler (SA_RESTART): inherent to interrupting it, so allowed.
        let pc = scanned[0]
        let interrupted = signalled.addresses[0]
        var instruction: [UInt8] = [0, 0]
        _ = instruction.withUnsafeMutableBytes { sw_read_memory(interrupted, $0.baseAddress, 2) }
        #expect(
            interrupted == pc || (interrupted == pc - 2 && instruction == [0x0F, 0x05]), "\(context)",
            sourceLocation: sourceLocation)
        // Every caller, frame for frame: the signal's stack has the handler's frames and the
        // trampoline removed (sw_trim_handler_frames), so nothing else may differ.
        #expect(
            Array(scanned.dropFirst()) == Array(signalled.addresses.dropFirst()), "\(context)",
            sourceLocation: sourceLocation)
        // By CFI to the outermost frame (not the heuristic scan, which libunwind's absence leaves).
        #expect(unwind.last_step == 0, "\(context)", sourceLocation: sourceLocation)
        let appFrames = Symbolicator.shared.symbolicate(scanned).filter { $0.symbol?.contains(app) == true }
        #expect(!appFrames.isEmpty, "the scan lacks \(app)\n\(context)", sourceLocation: sourceLocation)
    }
}

/// A pointer handed to the parked thread (the test owns it until the thread returned).
private struct UnsafeSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// A thread that unblocks the sampling signal, then runs a body that parks it in a system call
/// until the test releases it.
private final class ParkedThread: Sendable {
    let tid: Int32
    private let finished = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () -> Void) {
        let started = DispatchSemaphore(value: 0)
        let tid = Locked<Int32>(0)
        let finished = finished
        let thread = Thread {
            tid.withLock { $0 = sw_gettid() }
            Sampler.prepareCurrentThread()
            started.signal()
            body()
            finished.signal()
        }
        thread.start()
        started.wait()
        self.tid = tid.withLock { $0 }
    }

    /// /proc/<tid>/syscall: "nr args… sp pc" while in a system call.
    func syscallLine() -> String? {
        guard let text = try? String(contentsOfFile: "/proc/self/task/\(tid)/syscall", encoding: .utf8) else {
            return nil
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func isParked(in number: Int32) -> Bool {
        guard let line = syscallLine() else { return false }
        return line.split(separator: " ").first == Substring(String(number))
    }

    /// Waits (up to 10 s) until the thread sits in system call `number` with the same SP and PC
    /// at two looks 20 ms apart.
    func waitUntilParked(in number: Int32) -> Bool {
        let deadline = sw_monotonic_ns() + 10_000_000_000
        while sw_monotonic_ns() < deadline {
            if isParked(in: number), let first = syscallLine() {
                usleep(20_000)
                if syscallLine() == first { return true }
            }
            usleep(1_000)
        }
        return false
    }

    func join() -> Bool { finished.wait(timeout: .now() + 10) == .success }
}

// The app's frames: functions with frame pointers (SwiftPM builds keep them) that park the thread.

@inline(never) func scannerProbeSync(_ queue: DispatchQueue) {
    queue.sync { scannerProbeKeep() }
    scannerProbeKeep()
}

@inline(never) func scannerProbeMutex(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) {
    pthread_mutex_lock(mutex)
    pthread_mutex_unlock(mutex)
    scannerProbeKeep()
}

@inline(never) func scannerProbeRead(_ fd: Int32) {
    var byte: UInt8 = 0
    _ = read(fd, &byte, 1)
    scannerProbeKeep()
}

@inline(never) func scannerProbeReadBelowAllocation(_ fd: Int32) {
    _ = swt_read_below_stack_allocation(fd, 4096, 24)
    scannerProbeKeep()
}

@inline(never) func scannerProbeSemaphore(_ semaphore: DispatchSemaphore) {
    semaphore.wait()
    scannerProbeKeep()
}

/// Sleeps a microsecond `depth` calls down.
@inline(never) func scannerProbeRecurse(_ depth: Int) {
    if depth == 0 {
        var pause = timespec(tv_sec: 0, tv_nsec: 1_000)
        nanosleep(&pause, nil)
    } else {
        scannerProbeRecurse(depth - 1)
    }
    scannerProbeKeep()
}

/// Keeps each probe's call a call (not a tail call that would take the probe's frame away).
@inline(never) func scannerProbeKeep() { _ = sw_monotonic_ns() }
