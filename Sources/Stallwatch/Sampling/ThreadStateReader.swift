import Glibc
import StallwatchCore

/// Reads a thread's kernel state from /proc/self/task/<tid>: state (stat), current syscall
/// (syscall), wait channel (wchan) and CPU time (schedstat, in ns). The files stay open and
/// are re-read with pread, 2–4 µs each. Watchdog thread only.
final class ThreadStateReader {
    struct Reading {
        var state: ThreadState
        /// nil when running in user space ("running"); -1 when blocked outside a syscall.
        var syscall: Int32?
        var wchan: String?
        var cpuTimeNanos: UInt64
        /// The syscall's first two arguments, from the same read of the syscall file as
        /// `syscall` (a second read may find the thread elsewhere).
        var arguments: (UInt64, UInt64)?
        /// The user stack pointer, from the same read (in a syscall or blocked outside one).
        var stackPointer: UInt64?
    }

    private let stat: ProcFile
    private let syscall: ProcFile
    private let wchan: ProcFile
    private let schedstat: ProcFile
    private var buffer = [UInt8](repeating: 0, count: 1024)

    init(tid: Int32) {
        stat = ProcFile(tid: tid, "stat")
        syscall = ProcFile(tid: tid, "syscall")
        wchan = ProcFile(tid: tid, "wchan")
        schedstat = ProcFile(tid: tid, "schedstat")
    }

    /// The newest reading (`read()` keeps it for the wait facts of the same sample).
    private(set) var last: Reading?

    func read() -> Reading {
        let (number, arguments, stackPointer) = readSyscall()
        let reading = Reading(
            state: readState(), syscall: number, wchan: readWchan(), cpuTimeNanos: readCPUTime(),
            arguments: arguments, stackPointer: stackPointer)
        last = reading
        return reading
    }

    private func contents(_ file: borrowing ProcFile) -> Substring? {
        file.read(into: &buffer) { Substring(String(decoding: $0, as: UTF8.self)) }
    }

    private func readState() -> ThreadState {
        var state = ThreadState.unknown
        _ = ProcStat.read(stat, into: &buffer, through: 3) { _, letter in
            state = ThreadState(procCode: Character(Unicode.Scalar(letter[0])))
        }
        return state
    }

    /// The syscall the thread sleeps in (nil while running, -1 blocked outside one or unknown),
    /// its first two arguments and the user stack pointer, all from one read.
    private func readSyscall() -> (Int32?, (UInt64, UInt64)?, UInt64?) {
        guard let line = SyscallLine.read(syscall, into: &buffer).line else { return (-1, nil, nil) }
        switch line.place {
        case .running: return (nil, nil, nil)
        case .outside: return (-1, nil, line.stackPointer)
        case .inCall(let number): return (number, line.arguments, line.stackPointer)
        }
    }

    private func readWchan() -> String? {
        guard let text = contents(wchan) else { return nil }
        let name = text.trimmingTrailingWhitespace
        return name.isEmpty || name == "0" ? nil : String(name)
    }

    private func readCPUTime() -> UInt64 {
        guard let text = contents(schedstat) else { return 0 }
        return UInt64(text.prefix { $0 != " " }) ?? 0
    }
}

/// A thread's CPU clock: the kernel's `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`, as glibc's
/// `pthread_getcpuclockid` makes it. Unlike schedstat, its reading includes the slice the
/// thread is running now. Any thread.
struct ThreadCPUClock {
    private let id: clockid_t

    init(tid: Int32) { id = clockid_t(bitPattern: (~UInt32(bitPattern: tid) << 3) | 6) }

    /// The thread's CPU time now (one clock_gettime), nil when the thread has exited.
    func read() -> UInt64? {
        var now = timespec()
        guard clock_gettime(id, &now) == 0 else { return nil }
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

extension Substring {
    fileprivate var trimmingTrailingWhitespace: Substring {
        var text = self
        while let last = text.last, last == "\n" || last == " " { text = text.dropLast() }
        return text
    }
}
