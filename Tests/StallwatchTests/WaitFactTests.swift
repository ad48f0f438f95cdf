// Real stalls on a monitored loop are classified from what the kernel does for the thread
// (its /proc counters), and each sample names what the thread waited on: the file, the
// socket peer, the mapped file, the mutex owner with its stack, the SQL statement.
import CSQLite
import CStallwatchShims
import Dispatch
import Foundation
import StallwatchAnalysis
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import Stallwatch

@Suite(.serialized) struct WaitFactTests {
    /// Prints each sample (offset, state, syscall, verdict, fact) and returns the breakdown.
    private func examine(_ stall: Stall, _ name: String) -> StallBreakdown {
        let classifier = Classifier()
        var lines = ["\(name): \(stall.durationNanos / 1_000_000) ms, \(stall.samples.count) samples"]
        for sample in stall.samples {
            let verdict = classifier.classify(sample)
            let delta = sample.countersDelta
            lines.append(
                "  +\((sample.time - stall.start) / 1_000_000) ms \(sample.state.procCode) "
                    + "\(sample.syscallName ?? sample.syscall.map(String.init) ?? "-") frames=\(sample.frames.count) "
                    + "\(verdict.category.rawValue)/\(verdict.reason) [\(verdict.ruleName)] "
                    + "d(sys=\((delta?.systemNanos ?? 0) / 1_000_000)ms usr=\((delta?.userNanos ?? 0) / 1_000_000)ms "
                    + "rb=\(delta?.readBytes ?? 0) wb=\(delta?.writeBytes ?? 0) min=\(delta?.minorFaults ?? 0) "
                    + "maj=\(delta?.majorFaults ?? 0)) "
                    + "wait=\(sample.wait?.summary ?? "-")")
        }
        print(lines.joined(separator: "\n"))
        return classifier.breakdown(of: stall)
    }

    private func reasons(_ breakdown: StallBreakdown) -> [String] { breakdown.topReasons.map(\.reason) }

    /// Expects a stack containing `culprit` in the stall (from whichever source gave one) and
    /// prints the share of samples that carry one.
    private func expectCulprit(
        _ stall: Stall, _ culprit: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let withCulprit = stall.samples.filter { sample in
            sample.frames.prefix(32).contains { $0.symbol?.contains(culprit) == true }
        }
        let sources = Dictionary(grouping: stall.samples, by: \.source).mapValues(\.count)
        print(
            "  stacks: \(withCulprit.count) of \(stall.samples.count) samples hold \(culprit); sources \(sources)")
        // Under TSan a signal handler runs where TSan delivers it (its next interceptor), and its
        // unwind gives the interrupted instruction alone: the stacks are not checked there (every
        // other check of the test still runs; docs/sanitizers.md lists the tests).
        if Sanitizer.thread { return }
        #expect(!withCulprit.isEmpty, "no stack holds \(culprit): \(sources)", sourceLocation: sourceLocation)
    }

    @Test func largeReadOfAnEvictedFileIsIORead() async throws {
        let path = evictedTestFile(megabytes: 256)
        defer { unlink(path) }
        // The bytes are freed after the run: under ASan the free alone is a compute stall.
        let kept = Locked<Data?>(nil)
        let run = try await monitored { loop, measure in
            measure.post(loop) { readWholeFileForStallTest(path, keep: kept) }
        }
        kept.withLock { $0 = nil }
        let stall = try #require(run.ended.first)
        let breakdown = examine(stall, "read of an evicted 256 MB file")
        expectCulprit(stall, "readWholeFileForStallTest")
        #expect(breakdown.dominant == .io, "\(breakdown)")
        #expect(breakdown.topReasons.first?.reason == "read", "\(reasons(breakdown))")
        let facts = stall.samples.compactMap(\.wait)
        #expect(facts.contains { $0.kind == .file && $0.target == path && $0.operation == "read" }, "\(facts)")
    }

    @Test func largeBufferedWriteIsIOWrite() async throws {
        let path = Scenarios.temporaryPath("write")
        defer { unlink(path) }
        // Filled before the stall: only the write() is timed.
        let buffer = [UInt8](repeating: 0x42, count: 256 << 20)
        let run = try await monitored { loop, measure in
            measure.post(loop) { writeOnceForStallTest(path, buffer) }
        }
        let stall = try #require(run.ended.first)
        let breakdown = examine(stall, "one buffered 256 MB write()")
        expectCulprit(stall, "writeOnceForStallTest")
        #expect(breakdown.dominant == .io, "\(breakdown)")
        #expect(breakdown.topReasons.first?.reason == "write", "\(reasons(breakdown))")
        let facts = stall.samples.compactMap(\.wait)
        #expect(facts.contains { $0.kind == .file && $0.target == path }, "\(facts)")
    }

    @Test(
        .disabled(
            if: Sanitizer.address,
            "under ASan one sample reads smaps for the whole stall and sees no mapping grow (docs/sanitizers.md)"),
        .timingSensitive(
            "without perf (STALLWATCH_PERF=0, paranoid 3) the mapping is named by whose resident size grew "
                + "most between two smaps readings; when the machine faults other pages of this process in "
                + "meanwhile another mapping can win. With perf, the fault's own address names it"))
    func mappedEvictedFileTouchedPageByPageIsPageFault() async throws {
        let path = evictedTestFile(megabytes: 128)
        defer { unlink(path) }
        let run = try await monitored { loop, measure in
            measure.post(loop) { touchMappedFileForStallTest(path) }
        }
        let stall = try #require(run.ended.first)
        let breakdown = examine(stall, "mmap'ed evicted 128 MB file touched page by page")
        expectCulprit(stall, "touchMappedFileForStallTest")
        #expect(breakdown.dominant == .io, "\(breakdown)")
        #expect(breakdown.topReasons.first?.reason == "page fault", "\(reasons(breakdown))")
        let facts = stall.samples.compactMap(\.wait)
        #expect(facts.contains { $0.kind == .pageFault && $0.target == path }, "\(facts)")
        // With perf, each fault fact is the fault's own: its address, and the file mapped there.
        let perf = run.statistics.common.perfSampling
        guard perf == .kernelAndUser || perf == .userOnly else { return }
        let faults = facts.filter { $0.kind == .pageFault }
        #expect(faults.count >= 2, "\(facts)")
        // perf records a fault as it begins, and only while the stall is sampled: samples of a
        // thread blocked since before then in one fault (one 2 MiB folio read from a loaded disk
        // took 30 ms in one run) have no record of it and name no file. From the first record
        // on, every fault fact carries its address and the file.
        let recorded = faults.drop { $0.address == nil }
        #expect(!recorded.isEmpty, "\(facts)")
        // Under TSan the thread also faults in TSan's own shadow memory (anonymous: an address and
        // no file, 0x2ee4… in a CI rehearsal) and some samples find no record at all, so only the
        // file named above is checked there.
        guard !Sanitizer.thread else { return }
        #expect(recorded.allSatisfy { $0.address != nil && $0.target == path }, "\(facts)")
        #expect(faults.allSatisfy { $0.target == nil || $0.target == path }, "\(facts)")
    }

    @Test func mutexHeldByANamedThreadNamesTheOwnerAndItsStack() async throws {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        nonisolated(unsafe) let shared = mutex
        let owner = Box<Int32>(0)
        let held = DispatchSemaphore(value: 0)
        let thread = Thread {
            sw_set_thread_name("cache-refresh")
            owner.value = sw_gettid()
            FactCache.refresh(shared, held: held, milliseconds: 400)
        }
        thread.start()
        held.wait()
        let run = try await monitored { loop, measure in
            measure.post(loop) { lockMutexForStallTest(shared) }
        }
        while pthread_mutex_trylock(mutex) != 0 { usleep(1_000) }
        pthread_mutex_unlock(mutex)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        let stall = try #require(run.ended.first)
        let breakdown = examine(stall, "mutex held by 'cache-refresh'")
        expectCulprit(stall, "lockMutexForStallTest")
        #expect(breakdown.dominant == .lockWait, "\(breakdown)")
        let owners = stall.samples.compactMap { $0.wait?.kind == .mutex ? $0.wait?.owner : nil }
        #expect(
            owners.count >= stall.samples.count / 2, "\(owners.count) of \(stall.samples.count) samples name the owner")
        #expect(owners.allSatisfy { $0.tid == owner.value && $0.name == "cache-refresh" }, "\(owners)")
        #expect(
            owners.contains { $0.frames.contains { $0.symbol?.contains("FactCache.refresh") == true } }, "\(owners)")
        // The waiter's own stack (signal or scan) shows the wait.
        #expect(stall.topSymbols(depth: 16).contains { $0.contains("lockMutexForStallTest") })
    }

    /// A callout in `DispatchQueue.sync` onto a serial queue whose block runs on another thread:
    /// the scan of the waiter keeps the callout's function (the caller of `sync`), and the fact
    /// names the queue and the thread running its block.
    @Test func syncOntoABusyQueueNamesTheCallerTheQueueAndItsRunner() async throws {
        let queue = DispatchQueue(label: "fact-queue.busy")
        let runner = Box<Int32>(0)
        let busy = DispatchSemaphore(value: 0)
        queue.async {
            runner.value = sw_gettid()
            FactQueue.drain(busy: busy, milliseconds: 400)
        }
        busy.wait()
        let run = try await monitored { loop, measure in
            measure.post(loop) { syncOntoQueueForStallTest(queue) }
        }
        let stall = try #require(run.ended.first)
        let breakdown = examine(stall, "sync onto 'fact-queue.busy'")
        expectCulprit(stall, "syncOntoQueueForStallTest")
        #expect(breakdown.dominant == .lockWait, "\(breakdown)")
        let facts = stall.samples.compactMap { $0.wait?.kind == .futex ? $0.wait : nil }
        let named = facts.filter { $0.owner != nil }
        #expect(named.count >= stall.samples.count / 2, "\(named.count) of \(stall.samples.count) samples name it")
        #expect(
            named.allSatisfy { $0.owner?.tid == runner.value && $0.target == "fact-queue.busy" },
            "\(named.map(\.summary))")
        #expect(
            named.contains { $0.owner?.frames.contains { $0.symbol?.contains("FactQueue.drain") == true } == true },
            "\(named.map(\.summary))")
    }

    @Test func socketReadOnLoopbackNamesThePeer() async throws {
        let server = try LoopbackServer(replyAfterMilliseconds: 300)
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = server.port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(connected == 0)
        defer { close(client) }
        let run = try await monitored { loop, measure in
            measure.post(loop) { receiveForStallTest(client) }
        }
        server.join()
        let stall = try #require(run.ended.first)
        let breakdown = examine(stall, "recv on loopback")
        expectCulprit(stall, "receiveForStallTest")
        #expect(breakdown.dominant == .io, "\(breakdown)")
        #expect(breakdown.topReasons.first?.reason == "recvfrom", "\(reasons(breakdown))")
        let facts = stall.samples.compactMap(\.wait)
        #expect(facts.contains { $0.kind == .socket && $0.target == "127.0.0.1:\(server.port)" }, "\(facts)")
        #expect(stall.topSymbols(depth: 16).contains { $0.contains("receiveForStallTest") })
    }

    @Test func registeredSQLiteConnectionNamesTheStatement() async throws {
        let path = Scenarios.temporaryPath("db") + ".sqlite"
        defer { unlink(path) }
        var db: OpaquePointer?
        try #require(sqlite3_open(path, &db) == SQLITE_OK)
        defer { sqlite3_close(db) }
        try SQLiteStatements.register(db!)
        nonisolated(unsafe) let connection = db!
        let run = try await monitored { loop, measure in
            measure.post(loop) { blackHole(slowQueryForStallTest(connection, rows: 400_000)) }
        }
        let stall = try #require(run.ended.first)
        let breakdown = examine(stall, "registered SQLite slow query")
        expectCulprit(stall, "slowQueryForStallTest")
        // A running query is database only by its libsqlite3 frames, which TSan's late signal
        // does not show: the category is not checked there (the statement facts still are).
        if !Sanitizer.thread { #expect(breakdown.dominant == .database, "\(breakdown)") }
        let facts = stall.samples.compactMap(\.wait).filter { $0.kind == .database }
        #expect(facts.count >= stall.samples.count / 2, "\(facts.count) of \(stall.samples.count)")
        #expect(facts.allSatisfy { $0.statement?.contains("WITH RECURSIVE c(x)") == true }, "\(facts)")
        #expect(facts.allSatisfy { $0.target?.hasSuffix(path) == true }, "\(facts)")
        // After the statement ended the slot is empty again: a later stall carries no statement.
        let later = try await monitored { loop, measure in measure.post(loop) { spinForStallTest(milliseconds: 80) } }
        #expect(later.ended.first?.samples.allSatisfy { $0.wait?.kind != .database } == true)
        SQLiteStatements.unregister(connection)
    }

    @Test(.enabled(if: ProcessInfo.processInfo.activeProcessorCount >= 2, "the watchdog needs a CPU of its own"))
    func aThreadKeptOffItsCPUIsWaitingForACPUNotComputing() async throws {
        // The loop thread shares one CPU with a spinning thread while its own nice is 19: the
        // scheduler gives it about 1.5 % of that CPU, so 3 ms of its own work take ~200 ms.
        let run = try await monitored { loop, measure in
            measure.post(loop) { runKeptOffTheCPUForStallTest(cpuNanos: 3_000_000) }
        }
        let stall = try #require(run.ended.max { $0.durationNanos < $1.durationNanos }, "no stall")
        let breakdown = examine(stall, "kept off its CPU")
        let waiting = stall.samples.filter { $0.wait?.kind == .cpu }
        #expect(waiting.count >= 2, "\(waiting.count) of \(stall.samples.count) samples wait for a CPU")
        #expect(breakdown.dominant == .other, "\(breakdown)")
        #expect(reasons(breakdown).first == "waiting for a CPU", "\(reasons(breakdown))")
        #expect(waiting.allSatisfy { $0.state == .running })
    }

    @Test func aRecordedTraceKeepsTheFactsAndTheOwnersStack() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("stallwatch-waits-\(UUID()).trace")
            .path
        let keep = ProcessInfo.processInfo.environment["STALLWATCH_KEEP_TRACE"] != nil
        defer { if !keep { unlink(path) } else { print("kept trace \(path)") } }
        let file = evictedTestFile(megabytes: 128)
        defer { unlink(file) }
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        nonisolated(unsafe) let shared = mutex
        let held = DispatchSemaphore(value: 0)
        Thread {
            sw_set_thread_name("cache-refresh")
            FactCache.refresh(shared, held: held, milliseconds: 300)
        }.start()
        held.wait()
        let trace = try await recordedTrace(at: path) { loop in
            loop.post(label: "lock") { lockMutexForStallTest(shared) }
            loop.post(label: "read") { readWholeFileForStallTest(file) }
        }
        while pthread_mutex_trylock(mutex) != 0 { usleep(1_000) }
        pthread_mutex_unlock(mutex)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        #expect(trace.outcome.endedCleanly, "\(trace.outcome.problems)")
        let lock = try #require(trace.stalls.first { $0.callout.label == "lock" })
        let owner = try #require(lock.samples.compactMap { $0.wait?.owner }.first { !$0.frames.isEmpty })
        #expect(owner.name == "cache-refresh")
        #expect(owner.frames.contains { $0.symbol?.contains("FactCache.refresh") == true })
        #expect(lock.samples.allSatisfy { $0.counters != nil })
        let read = try #require(trace.stalls.first { $0.callout.label == "read" })
        // The file is named when a sample catches the read in D (its arguments are shown then).
        #expect(read.samples.contains { $0.wait?.operation == "read" }, "\(read.samples.map(\.wait))")
    }
}

// The stalling work, named for the stacks.

// readWholeFileForStallTest (one Data(contentsOf:), the classic main-thread read) is in StackSourceTests.

/// Runs `cpuNanos` of the calling thread's own CPU time while it shares its CPU with a
/// spinning thread (which inherits that one CPU) and has nice 19 (at most 5 s of wall time);
/// then puts its CPU mask back and stops the spinner. Its nice stays 19 (lowering it again needs privilege): call it on a
/// thread of its own.
@inline(never) func runKeptOffTheCPUForStallTest(cpuNanos: UInt64) {
    var allowed = cpu_set_t()
    guard sw_get_thread_affinity(&allowed) == 0 else { return }
    let first = withUnsafeBytes(of: &allowed) { bytes in
        (0..<(bytes.count * 8)).first { bytes[$0 / 8] & (1 << ($0 % 8)) != 0 }
    }
    guard let first else { return }
    var one = cpu_set_t()
    withUnsafeMutableBytes(of: &one) { $0[first / 8] = UInt8(1 << (first % 8)) }
    guard sw_set_thread_affinity(&one) == 0 else { return }
    defer { _ = sw_set_thread_affinity(&allowed) }
    // The spinner is made before the nice goes up (a new thread inherits it) and runs before
    // the work starts.
    let flags = Locked((spinning: false, stop: false))
    let spinner = Thread {
        flags.withLock { $0.spinning = true }
        while !flags.withLock({ $0.stop }) {}
    }
    spinner.start()
    defer { flags.withLock { $0.stop = true } }
    while !flags.withLock({ $0.spinning }) { usleep(100) }
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(sw_gettid()), 19)
    let clock = ThreadCPUClock(tid: sw_gettid())
    func cpuTime() -> UInt64 { clock.read() ?? 0 }
    let start = cpuTime()
    let giveUp = MainLoop.monotonicNanos() + 5_000_000_000
    while cpuTime() - start < cpuNanos && MainLoop.monotonicNanos() < giveUp {}
}

@inline(never) func writeOnceForStallTest(_ path: String, _ buffer: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(fd >= 0)
    _ = buffer.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

/// The whole file at `path`, mapped (shared and writable with `writable`), and its length.
func mapWholeFile(_ path: String, writable: Bool = false) -> (base: UnsafeMutableRawPointer, length: Int) {
    let fd = open(path, writable ? O_RDWR : O_RDONLY)
    precondition(fd >= 0)
    defer { close(fd) }
    var info = stat()
    fstat(fd, &info)
    let length = Int(info.st_size)
    let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
    return (mmap(nil, length, protection, writable ? MAP_SHARED : MAP_PRIVATE, fd, 0)!, length)
}

@inline(never) func touchMappedFileForStallTest(_ path: String) {
    let (base, length) = mapWholeFile(path)
    let bytes = base.assumingMemoryBound(to: UInt8.self)
    var sum: UInt64 = 0
    for offset in stride(from: 0, to: length, by: 4096) { sum &+= UInt64(bytes[offset]) }
    blackHole(sum)
    munmap(base, length)
}

@inline(never) func receiveForStallTest(_ fd: Int32) {
    var buffer = [UInt8](repeating: 0, count: 64)
    _ = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
}

enum FactQueue {
    /// A queue's block that sleeps `milliseconds` (so its thread is caught in a syscall).
    @inline(never) static func drain(busy: DispatchSemaphore, milliseconds: UInt32) {
        busy.signal()
        usleep(milliseconds * 1000)
    }
}

/// A callout that waits in `DispatchQueue.sync` for `queue`.
@inline(never) func syncOntoQueueForStallTest(_ queue: DispatchQueue) {
    queue.sync { _ = sw_monotonic_ns() }
    _ = sw_monotonic_ns()
}

enum FactCache {
    /// Holds `mutex` for `milliseconds`, sleeping (so the owner is caught in a syscall).
    @inline(never) static func refresh(
        _ mutex: UnsafeMutablePointer<pthread_mutex_t>, held: DispatchSemaphore, milliseconds: UInt32
    ) {
        pthread_mutex_lock(mutex)
        held.signal()
        usleep(milliseconds * 1000)
        pthread_mutex_unlock(mutex)
    }
}

/// A TCP server on 127.0.0.1 that accepts one client and replies after a delay.
final class LoopbackServer: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let done = DispatchSemaphore(value: 0)

    init(replyAfterMilliseconds delay: UInt32) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 1) == 0
                    && getsockname(listener, $0, &length) == 0
            }
        }
        port = UInt16(bigEndian: address.sin_port)
        try #require(bound)
        let done = done
        Thread {
            let peer = accept(listener, nil, nil)
            usleep(delay * 1000)
            _ = send(peer, "ok", 2, 0)
            close(peer)
            done.signal()
        }.start()
    }

    func join() {
        done.wait()
        close(listener)
    }
}
