import CStallwatchShims
import Glibc
import StallwatchCore

/// Adds the kernel counters and the wait-for fact to each sample of a stall: part of a thread's
/// `ThreadSampler`, whatever watches the thread (the loop's watchdog, a heartbeat executor's,
/// each pool thread's). Every method runs on the watchdog thread, never the sampled one's.
///
/// Counter deltas: each sample's delta is from the previous sample of the same stall. For the
/// first sample it is from the reading the watchdog takes when it first sees the callout
/// running (`sawCallout`, once per callout it sleeps toward the deadline of), so the first
/// sample's delta covers most of the budget; a stall first seen only after its deadline (the
/// watchdog overslept) has no delta on its first sample.
final class SampleFacts {
    private let tid: Int32
    private let counters: KernelCounterReader
    /// The sampler's reader: a sample's syscall arguments come from the read that gave its syscall.
    private let reader: ThreadStateReader
    /// The sampler's stacks: a perf stack taken in a syscall carries its first argument.
    private let stacks: StackCapture
    /// The statement the thread's annotations say runs now (nil: a thread without scopes).
    private let statements: StatementSlot?
    /// The thread's fault addresses (perf), if perf is available and not switched off.
    private let faults: FaultAddresses?
    /// When the previous sample of this stall was taken (faults since then are its interval's).
    private var previousTime: UInt64 = 0
    private var baseline: (sequence: UInt64, counters: KernelCounters)?
    private var previous: KernelCounters?
    private var previousWait: WaitFact?
    private var mappings = MappingGrowth()
    private var ownerScanners: [Int32: StackScanner] = [:]
    private var pendingCounters: KernelCounters?
    /// The thread's CPU clock: unlike schedstat's run delay, it moves while the thread waits
    /// (a run delay is added only when the thread gets a CPU again).
    private let cpuClock: ThreadCPUClock
    /// The previous sample's CPU time, when it was read and whether the thread was runnable.
    private var previousCPU: (nanos: UInt64, readAt: UInt64, runnable: Bool)?
    /// The current sample's CPU time and when it was read, just before its /proc state.
    private var currentCPU: (nanos: UInt64, readAt: UInt64)?

    /// A runnable thread that ran for at most this share of the time since the previous
    /// sample, runnable then too, waited for a CPU (`WaitFact.Kind.cpu`). A quarter: a thread
    /// that shares a core with one or two busy threads still runs a third to a half of the
    /// time, and that is its own code running slowly, not a wait.
    static let cpuWaitShare = 0.25
    private var files = GrowingFiles()

    /// Syscalls whose first argument is the descriptor they wait on.
    static let descriptorSyscalls: Set<Int32> = Set(
        [
            "read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2",
            "pwritev2", "recvfrom", "recvmsg", "recvmmsg", "sendto", "sendmsg", "sendmmsg", "fsync",
            "fdatasync", "sync_file_range", "ftruncate", "fallocate", "flock", "fcntl", "fstat", "lseek",
            "getdents64", "accept", "accept4", "connect", "ioctl", "copy_file_range", "sendfile", "splice",
        ].map { name in
            guard let number = SyscallTable.number(for: name) else {
                preconditionFailure("no syscall named \(name) in SyscallTable")
            }
            return number
        })
    private static let futexSyscall = SyscallTable.number(for: "futex")!

    /// Syscalls whose first argument is an address in a mapping whose file they may wait on
    /// (writeback, read-in).
    static let addressSyscalls: Set<Int32> = Set(
        ["msync", "madvise", "mlock", "mlock2", "remap_file_pages"].map { SyscallTable.number(for: $0)! })

    /// Syscalls that count in `syscr`/`syscw` when they return, whatever they return: while
    /// neither count moved, a thread seen in one is still in it.
    static let countedSyscalls: Set<Int32> = Set(
        [
            "read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2", "pwritev2",
            "sendfile", "copy_file_range",
        ].map { SyscallTable.number(for: $0)! })

    /// Facts for thread `tid`, with what its sampler's `reader` and `stacks` read;
    /// `faultAddresses` opens the perf page-fault event (unless `STALLWATCH_PERF` switches perf
    /// off), which stays attached to the thread.
    init(tid: Int32, statements: StatementSlot?, reader: ThreadStateReader, stacks: StackCapture, faultAddresses: Bool)
    {
        self.tid = tid
        self.statements = statements
        self.reader = reader
        self.stacks = stacks
        counters = KernelCounterReader(tid: tid)
        cpuClock = ThreadCPUClock(tid: tid)
        faults = faultAddresses && !PerfSampler.disabledByEnvironment ? FaultAddresses.open(tid: tid).0 : nil
    }

    /// The watchdog saw callout `sequence` running and will sleep to its deadline: take the
    /// reading its first sample's delta starts from (once per callout).
    func sawCallout(_ sequence: UInt64) {
        guard baseline?.sequence != sequence, let reading = counters.read() else { return }
        baseline = (sequence, reading)
    }

    /// A stall of callout `sequence` starts: its first delta is from that callout's baseline
    /// (none for an executor's stall: its first sample has no delta).
    func beginStall(_ sequence: UInt64?) {
        previous = sequence != nil && baseline?.sequence == sequence ? baseline?.counters : nil
        previousWait = nil
        previousTime = 0
        previousCPU = nil
        mappings.reset()
        files.reset()
        faults?.enable()
    }

    /// The stall ended: faults are no longer recorded.
    func endStall() { faults?.disable() }

    /// Takes a sample with `take` (the watchdog's capture), reading the counters and the
    /// syscall arguments just before it, and adds the counters, their delta and the wait fact.
    func sample(_ take: () -> Sample) -> Sample {
        pendingCounters = counters.read()
        currentCPU = cpuClock.read().map { ($0, sw_monotonic_ns()) }
        var sample = take()
        complete(&sample)
        return sample
    }

    /// Fills `sample.counters`, `countersDelta` and `wait`.
    private func complete(_ sample: inout Sample) {
        defer {
            pendingCounters = nil
            previousTime = sample.time
        }
        if let reading = pendingCounters ?? counters.read() {
            sample.counters = reading
            sample.countersDelta = previous.map { reading.delta(since: $0) }
            previous = reading
        }
        // A CPU wait is the fact only when nothing else is known; the facts that carry on from
        // sample to sample (a read, a page fault in progress) carry on across it.
        let fact = waitFact(sample)
        let cpu = cpuWait(sample)
        sample.wait = fact ?? cpu
        previousWait = fact
    }

    /// A CPU wait when the thread was runnable at this sample and the previous one and ran for
    /// at most `cpuWaitShare` of the time between them.
    private func cpuWait(_ sample: Sample) -> WaitFact? {
        guard let current = currentCPU else { return nil }
        let runnable = sample.state == .running
        defer { previousCPU = (current.nanos, current.readAt, runnable) }
        guard runnable, let previous = previousCPU, previous.runnable, current.readAt > previous.readAt,
            current.nanos >= previous.nanos
        else { return nil }
        let ran = Double(current.nanos - previous.nanos)
        return ran <= Self.cpuWaitShare * Double(current.readAt - previous.readAt) ? WaitFact(kind: .cpu) : nil
    }

    private func waitFact(_ sample: Sample) -> WaitFact? {
        if let running = statements?.read() {
            return WaitFact(
                kind: .database, target: SQLiteStatements.file(forTag: running.tag), statement: running.text)
        }
        let delta = sample.countersDelta
        let outside = sample.syscall == -1
        if (delta?.majorFaults ?? 0) > 0 || (outside && (sample.state == .diskSleep || (delta?.readBytes ?? 0) > 0)) {
            if let fault = recordedFault(inProgress: outside) { return fault }
            if let file = grownMapping() { return WaitFact(kind: .pageFault, target: file) }
            if sample.syscall == nil || outside { return WaitFact(kind: .pageFault) }
        }
        // Touching a mapped file page by page: readahead brings most pages in ahead of the
        // thread, so between the faults that wait (major, or D outside a syscall) it runs on
        // pages already mapped, or waits for a CPU. While no read or write syscall completes and
        // user time does not dominate, it is still faulting the same file in.
        if sample.syscall == nil, let last = previousWait, last.kind == .pageFault, let delta,
            delta.readSyscalls == 0, delta.writeSyscalls == 0, delta.cpuShare == .system
        {
            if let fault = recordedFault(inProgress: false) { return fault }
            if last.target == nil, let file = grownMapping() {
                return WaitFact(kind: .pageFault, target: file)
            }
            return last
        }
        guard let number = sample.syscall else {
            // The sampling signal ran its handler: the thread was in user space then, not in a
            // read() (a file read finishes before a handler runs, and would move syscr). Storage
            // reads without a syscall are then faults on a mapped file. Only a signal-captured
            // stack says this: perf and the scan also give stacks of a thread in the kernel.
            if sample.source == .signal {
                guard let delta, delta.readBytes > 0, delta.readSyscalls == 0 else { return nil }
                return recordedFault(inProgress: false) ?? WaitFact(kind: .pageFault, target: grownMapping())
            }
            if let named = perfDescriptor(sample) { return named }
            if let carried = carriedForward(sample) { return carried }
            guard let delta, delta.cpuShare == .system else { return nil }
            // Kernel time in user-mode faults on a mapped file (dirtying a shared mapping, its
            // writeback throttled): not a syscall, whatever bytes move.
            if delta.readSyscalls == 0, delta.writeSyscalls == 0, let fault = recordedFault(inProgress: false) {
                return fault
            }
            // One long buffered write on CPU: the file it writes is the one whose size grows.
            if delta.writeBytes > 0 {
                if let (fd, path) = files.grown(by: .size) {
                    return WaitFact(kind: .file, operation: "write", fd: fd, target: path)
                }
                return WaitFact(kind: .file, operation: "write")
            }
            // One long read on CPU pulling from storage: the file is the one filling the cache.
            if delta.readBytes > 0 {
                if let (fd, path) = files.grown(by: .cachedPages) {
                    return WaitFact(kind: .file, operation: "read", fd: fd, target: path)
                }
                return WaitFact(kind: .file, operation: "read")
            }
            return nil
        }
        // From the read of the syscall file that gave the sample its syscall.
        guard let reading = reader.last, reading.syscall == number, let arguments = reading.arguments else {
            return nil
        }
        let name = sample.syscallName
        if Self.descriptorSyscalls.contains(number) {
            let fd = Int32(truncatingIfNeeded: arguments.0)
            guard let (kind, target) = DescriptorResolver.resolve(fd) else {
                return WaitFact(kind: .file, operation: name, fd: fd)
            }
            return WaitFact(kind: kind, operation: name, fd: fd, target: target)
        }
        if Self.addressSyscalls.contains(number) {
            guard let mapping = mapping(of: arguments.0), mapping.isFile else { return nil }
            return WaitFact(kind: .file, operation: name, target: mapping.name, address: arguments.0)
        }
        if number == Self.futexSyscall {
            var fact = FutexProbe.probe(address: arguments.0, operation: arguments.1, waiter: tid)
            // A blocked DispatchQueue.sync: the queue, and the thread running its block.
            if fact.owner == nil, let stackPointer = reading.stackPointer,
                let queue = DispatchQueueProbe.probe(futex: arguments.0, stackPointer: stackPointer, waiter: tid),
                let name = ProcFile.threadName(queue.owner)
            {
                fact.target = queue.label
                fact.owner = WaitFact.Owner(tid: queue.owner, name: name)
            }
            if let owner = fact.owner { fact.owner?.frames = ownerStack(owner.tid).map { Frame(address: $0) } }
            return fact
        }
        return nil
    }

    /// A thread on CPU inside one long syscall shows `running`, not its arguments (nor does one
    /// waiting for a CPU: both are TASK_RUNNING). While no read or write syscall completed since
    /// the previous sample (syscr and syscw still), it is still in the syscall the previous sample
    /// named: keep that sample's descriptor fact (a better-named one replaces an unnamed one).
    /// For a syscall that counts in syscr/syscw as it returns that is certain; for another
    /// (fsync, recv) user time must not dominate too. Under CPU load utime and stime advance by
    /// scaled ticks that can go either way over 5 ms, so the certain case does not ask them.
    private func carriedForward(_ sample: Sample) -> WaitFact? {
        guard let last = previousWait, last.kind == .file || last.kind == .socket,
            let delta = sample.countersDelta, delta.readSyscalls == 0, delta.writeSyscalls == 0
        else { return nil }
        let counted = last.operation.flatMap(SyscallTable.number(for:)).map(Self.countedSyscalls.contains) ?? false
        guard counted || delta.cpuShare == .system else { return nil }
        if last.target == nil, last.operation == "write", delta.writeBytes > 0,
            let (fd, path) = files.grown(by: .size)
        {
            return WaitFact(kind: .file, operation: "write", fd: fd, target: path)
        }
        if last.target == nil, last.operation == "read", delta.readBytes > 0,
            let (fd, path) = files.grown(by: .cachedPages)
        {
            return WaitFact(kind: .file, operation: "read", fd: fd, target: path)
        }
        return last
    }

    /// The fault the thread waits in (`inProgress`: blocked outside a syscall, so its newest
    /// fault record, written as the fault began, is that fault), else its newest fault on a
    /// file mapping since the previous sample; from the perf page-fault event. nil without one.
    private func recordedFault(inProgress: Bool) -> WaitFact? {
        guard let recent = faults?.newest(), let newest = recent.first else { return nil }
        if inProgress {
            let mapping = mapping(of: newest.address)
            return WaitFact(
                kind: .pageFault, target: mapping?.isFile == true ? mapping?.name : nil, address: newest.address)
        }
        for fault in recent where fault.time >= previousTime {
            if let mapping = mapping(of: fault.address), mapping.isFile {
                return WaitFact(kind: .pageFault, target: mapping.name, address: fault.address)
            }
        }
        return nil
    }

    /// A perf stack taken inside a syscall names its descriptor (its first argument, RDI at
    /// entry) when the syscall is known to take one: the previous sample's syscall on the same
    /// descriptor, else the libc wrapper the user IP is in (`read`, `__libc_pread64`).
    private func perfDescriptor(_ sample: Sample) -> WaitFact? {
        guard sample.source == .perf, let argument = stacks.perfSyscallArgument, argument <= Int32.max else {
            return nil
        }
        let fd = Int32(argument)
        var operation: String?
        if let last = previousWait, last.fd == fd, let known = last.operation { operation = known }
        if operation == nil, let ip = sample.frames.first?.address { operation = Self.wrapperSyscall(at: ip) }
        guard let operation, let number = SyscallTable.number(for: operation), Self.descriptorSyscalls.contains(number),
            let (kind, target) = DescriptorResolver.resolve(fd)
        else { return nil }
        return WaitFact(kind: kind, operation: operation, fd: fd, target: target)
    }

    /// The syscall a libc wrapper at `address` makes, by its exported name, if it names one.
    static func wrapperSyscall(at address: UInt64) -> String? {
        DynamicLoader.symbol(at: address)?.name.flatMap(wrapperSyscall(named:))
    }

    /// The syscall a libc wrapper named `symbol` makes (`__libc_read`, `__pread64` → `read`,
    /// `pread64`), if it names one.
    static func wrapperSyscall(named symbol: String) -> String? {
        var name = Substring(symbol)
        while name.hasPrefix("_") { name = name.dropFirst() }
        for prefix in ["libc_", "GI_", "GI___libc_"] where name.hasPrefix(prefix) {
            name = name.dropFirst(prefix.count)
        }
        while name.hasPrefix("_") { name = name.dropFirst() }
        let text = String(name)
        return SyscallTable.number(for: text) != nil ? text : nil
    }

    /// Without the fault event, the file mapping whose resident size grew the most. With it, nil:
    /// a fault it has no record of began before the stall was detected, and smaps growth can
    /// name another mapping (another thread's, or this process's code paged in meanwhile).
    private func grownMapping() -> String? { faults == nil ? mappings.grownMapping() : nil }

    private func mapping(of address: UInt64) -> FaultAddresses.Mapping? {
        faults?.mapping(of: address) ?? FaultAddresses.lookUp(address)
    }

    /// The owner's stack, only by scanning (the owner must be blocked in a syscall). A signal
    /// is not sent: the owner never prepared for the sampler, and a first handler run there
    /// could allocate inside whatever the owner interrupted (malloc's lock) and hang the app.
    private func ownerStack(_ owner: Int32) -> [UInt64] {
        if ownerScanners[owner] == nil {
            if ownerScanners.count >= 8 { ownerScanners.removeAll() }
            ownerScanners[owner] = StackScanner(tid: owner)
        }
        return ownerScanners[owner]!.scan()
    }
}

/// Which regular file of the process a long syscall on CPU works on (/proc shows no arguments
/// then): for a buffered `write()` the file whose size grows (page by page while the syscall
/// runs), for a `read()` from storage the file whose page-cache pages grow (cachestat(2),
/// Linux 6.5+; older kernels: not named). Compares every open regular file between two
/// samples. Watchdog only.
struct GrowingFiles {
    enum Measure {
        case size, cachedPages
    }

    private var last: [Measure: [Int32: (inode: UInt64, value: UInt64)]] = [:]

    mutating func reset() { last = [:] }

    /// The descriptor and path of the file that grew the most by `measure` since the previous
    /// call with the same measure.
    mutating func grown(by measure: Measure) -> (Int32, String)? {
        var now: [Int32: (inode: UInt64, value: UInt64)] = [:]
        guard let directory = opendir("/proc/self/fd") else { return nil }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let fd = Int32(name) else { continue }
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            switch measure {
            case .size:
                now[fd] = (UInt64(info.st_ino), UInt64(max(0, info.st_size)))
            case .cachedPages:
                var pages: UInt64 = 0
                if sw_cached_pages(fd, &pages) == 0 { now[fd] = (UInt64(info.st_ino), pages) }
            }
        }
        closedir(directory)
        let before = last[measure] ?? [:]
        last[measure] = now
        var best: (fd: Int32, growth: UInt64)?
        for (fd, file) in now {
            guard let old = before[fd], old.inode == file.inode, file.value > old.value else { continue }
            if file.value - old.value > (best?.growth ?? 0) { best = (fd, file.value - old.value) }
        }
        guard let best, let path = DescriptorResolver.readLink("/proc/self/fd/\(best.fd)") else { return nil }
        return (best.fd, path)
    }
}
