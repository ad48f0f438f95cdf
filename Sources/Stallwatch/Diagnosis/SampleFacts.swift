import CStallwatchShims
import Glibc
import StallwatchCore

/// Adds the kernel counters and the wait-for fact to each sample of a stall. Created once per
/// watchdog (for the loop thread); every method runs on the watchdog thread, never the loop's.
///
/// Counter deltas: each sample's delta is from the previous sample of the same stall. For the
/// first sample it is from the reading the watchdog takes when it first sees the callout
/// running (`sawCallout`, once per callout it sleeps toward the deadline of), so the first
/// sample's delta covers most of the budget; a stall first seen only after its deadline (the
/// watchdog overslept) has no delta on its first sample.
final class SampleFacts {
    private let tid: Int32
    private let counters: KernelCounterReader
    private let syscallFD: Int32
    private let statements: StatementSlot
    private var baseline: (sequence: UInt64, counters: KernelCounters)?
    private var previous: KernelCounters?
    private var previousWait: WaitFact?
    private var mappings = MappingGrowth()
    private var ownerScanners: [Int32: StackScanner] = [:]
    /// The syscall line read just before the sample (the capture's signal may move the thread).
    private var pending: (number: Int32, arguments: (UInt64, UInt64))?
    private var pendingCounters: KernelCounters?
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

    init(tid: Int32, statements: StatementSlot) {
        self.tid = tid
        self.statements = statements
        counters = KernelCounterReader(tid: tid)
        syscallFD = open("/proc/self/task/\(tid)/syscall", O_RDONLY | O_CLOEXEC)
    }

    deinit { if syscallFD >= 0 { close(syscallFD) } }

    /// The watchdog saw callout `sequence` running and will sleep to its deadline: take the
    /// reading its first sample's delta starts from (once per callout).
    func sawCallout(_ sequence: UInt64) {
        guard baseline?.sequence != sequence, let reading = counters.read() else { return }
        baseline = (sequence, reading)
    }

    /// A stall of callout `sequence` starts: its first delta is from that callout's baseline.
    func beginStall(_ sequence: UInt64) {
        previous = baseline?.sequence == sequence ? baseline?.counters : nil
        previousWait = nil
        mappings.reset()
        files.reset()
    }

    /// Takes a sample with `take` (the watchdog's capture), reading the counters and the
    /// syscall arguments just before it, and adds the counters, their delta and the wait fact.
    func sample(_ take: () -> Sample) -> Sample {
        pendingCounters = counters.read()
        pending = readSyscallLine()
        var sample = take()
        complete(&sample)
        return sample
    }

    /// Fills `sample.counters`, `countersDelta` and `wait`.
    private func complete(_ sample: inout Sample) {
        defer {
            pending = nil
            pendingCounters = nil
        }
        if let reading = pendingCounters ?? counters.read() {
            sample.counters = reading
            sample.countersDelta = previous.map { reading.delta(since: $0) }
            previous = reading
        }
        sample.wait = waitFact(sample)
        previousWait = sample.wait
    }

    private func waitFact(_ sample: Sample) -> WaitFact? {
        if let running = statements.read() {
            return WaitFact(
                kind: .database, target: SQLiteStatements.file(forTag: running.tag), statement: running.text)
        }
        let delta = sample.countersDelta
        let outside = sample.syscall == -1
        if (delta?.majorFaults ?? 0) > 0 || (outside && (sample.state == .diskSleep || (delta?.readBytes ?? 0) > 0)) {
            if let file = mappings.grownMapping() { return WaitFact(kind: .pageFault, target: file) }
            if sample.syscall == nil || outside { return WaitFact(kind: .pageFault) }
        }
        // Touching a mapped file page by page: readahead brings most pages in ahead of the
        // thread, so between the faults that wait (major, or D outside a syscall) it runs on
        // pages already mapped, or waits for a CPU. While no read or write syscall completes and
        // user time does not dominate, it is still faulting the same file in.
        if sample.syscall == nil, let last = previousWait, last.kind == .pageFault, let delta,
            delta.readSyscalls == 0, delta.writeSyscalls == 0, delta.cpuShare == .system
        {
            if last.target == nil, let file = mappings.grownMapping() {
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
                return WaitFact(kind: .pageFault, target: mappings.grownMapping())
            }
            if let carried = carriedForward(sample) { return carried }
            guard let delta, delta.cpuShare == .system else { return nil }
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
        // The line read before the capture, else (the thread entered the syscall meanwhile) now.
        guard let line = pending?.number == number ? pending : readSyscallLine(), line.number == number else {
            return nil
        }
        let arguments = line.arguments
        let name = sample.syscallName
        if Self.descriptorSyscalls.contains(number) {
            let fd = Int32(truncatingIfNeeded: arguments.0)
            guard let (kind, target) = DescriptorResolver.resolve(fd) else {
                return WaitFact(kind: .file, operation: name, fd: fd)
            }
            return WaitFact(kind: kind, operation: name, fd: fd, target: target)
        }
        if number == Self.futexSyscall {
            var fact = FutexProbe.probe(address: arguments.0, operation: arguments.1, waiter: tid)
            if let owner = fact.owner { fact.owner?.frames = ownerStack(owner.tid).map { Frame(address: $0) } }
            return fact
        }
        return nil
    }

    /// A thread on CPU inside one long syscall shows `running`, not its arguments. While no
    /// read or write syscall completed since the previous sample (syscr and syscw still) and
    /// user time did not dominate, it is still in the syscall the previous sample named: keep
    /// that sample's descriptor fact (a better-named one replaces an unnamed one).
    private func carriedForward(_ sample: Sample) -> WaitFact? {
        guard let last = previousWait, last.kind == .file || last.kind == .socket,
            let delta = sample.countersDelta, delta.readSyscalls == 0, delta.writeSyscalls == 0,
            delta.cpuShare == .system
        else { return nil }
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

    /// The syscall the loop thread is in and its first two arguments, if it is in one.
    private func readSyscallLine() -> (number: Int32, arguments: (UInt64, UInt64))? {
        guard syscallFD >= 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { pread(syscallFD, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        let fields = String(decoding: buffer[0..<n], as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count >= 3, let number = Int32(fields[0]), number >= 0, let first = UInt64(hex: fields[1]),
            let second = UInt64(hex: fields[2])
        else { return nil }
        return (number, (first, second))
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
