import Glibc
import StallwatchCore

/// Tells whether an executor's thread is parked in its idle wait, from
/// /proc/self/task/<tid>/syscall alone (one pread, 2–4 µs): the heartbeat monitor sends no
/// heartbeat to a thread parked there, so an idle executor is never woken.
///
/// An executor parks in `epoll_wait`, `poll` or a futex; a callout that blocks on a lock or a
/// poll of its own waits in the same calls. What tells them apart is the wait itself: its
/// call, first argument (the futex word, the epoll descriptor, the poll set), user SP and PC.
/// The idle wait of an executor is one such signature (a few, at most), always the same, and
/// the watchdog teaches it to the probe: the wait a thread is in at the first look after a
/// heartbeat ran within the budget is where it parks; and a wait not known yet gets one
/// heartbeat — if that runs within the budget, the thread was free to run it, so the wait was
/// idle; if it runs late, the wait was a stall (a lock, a poll inside a callout). Watchdog
/// thread only.
final class IdleProbe {
    /// The calls executors park in when they have nothing to do.
    static let idleCalls: Set<Int32> = Set(
        ["futex", "epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select", "pselect6"].map { name in
            guard let number = SyscallTable.number(for: name) else {
                preconditionFailure("no syscall named \(name) in SyscallTable")
            }
            return number
        })

    /// `futex`'s number.
    static let futex: Int32 = {
        guard let number = SyscallTable.number(for: "futex") else { preconditionFailure("no futex in SyscallTable") }
        return number
    }()

    /// The calls whose first argument identifies what they wait on (futex word, epoll fd).
    static let keyedByArgument: Set<Int32> = Set(
        ["futex", "epoll_wait", "epoll_pwait", "epoll_pwait2"].compactMap { SyscallTable.number(for: $0) })

    /// One wait, as /proc shows it.
    struct Signature: Hashable {
        var call: Int32
        var argument: UInt64
        var stackPointer: UInt64
        var programCounter: UInt64
    }

    enum State: Equatable {
        /// Parked in its learned idle wait: send nothing.
        case idle
        /// In a wait call the probe has not learned: a heartbeat tells which it is.
        case unknownWait(Signature)
        /// Running, or in another call: a heartbeat tells how late it is.
        case busy
        /// The thread has exited (a libdispatch worker retires after ~5 s idle).
        case gone
    }

    let tid: Int32
    private let syscall: ProcFile
    private var idle: Set<Signature> = []
    private var buffer = [UInt8](repeating: 0, count: 256)

    init(tid: Int32) {
        self.tid = tid
        syscall = ProcFile(tid: tid, "syscall")
    }

    /// Remembers `signature` as the executor's idle wait (its heartbeat ran promptly).
    func learn(_ signature: Signature) {
        // A handful at most (an executor parks in one or two places); a bound keeps a thread
        // that waits everywhere from growing the set.
        if idle.count < 16 { idle.insert(signature) }
    }

    /// One pread and a parse without allocation: this runs for every look at every executor.
    func state() -> State {
        let (readable, line) = SyscallLine.read(syscall, into: &buffer)
        guard readable else { return .gone }
        guard let line, case .inCall(let call) = line.place, Self.idleCalls.contains(call),
            let stackPointer = line.stackPointer, let programCounter = line.programCounter
        else { return .busy }
        // A futex word or an epoll descriptor names the wait; a poll set is often a fresh
        // array each time round the loop, so for those calls only SP and PC count.
        let keyed = Self.keyedByArgument.contains(call)
        let signature = Signature(
            call: call, argument: keyed ? line.arguments.0 : 0, stackPointer: stackPointer,
            programCounter: programCounter)
        return idle.contains(signature) ? .idle : .unknownWait(signature)
    }
}
