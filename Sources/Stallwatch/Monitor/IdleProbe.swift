import Glibc
import StallwatchCore

/// Tells whether an executor's thread is parked in its idle wait, from
/// /proc/self/task/<tid>/syscall alone (one pread, 2–4 µs): the heartbeat monitor sends no
/// heartbeat to a thread parked there, so an idle executor is never woken.
///
/// An executor parks in `epoll_wait`, `poll` or a futex at the top of its loop; a callout that
/// blocks on a lock or a poll of its own waits in the same calls, but deeper in the stack. So a
/// wait counts as idle only at the shallowest stack pointer seen for that thread in such a call
/// (stacks grow down: the highest SP). A deeper wait is a callout that blocks, and gets a
/// heartbeat. Watchdog thread only.
final class IdleProbe {
    /// The calls executors park in when they have nothing to do.
    static let idleCalls: Set<Int32> = Set(
        ["futex", "epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select", "pselect6"].map { name in
            guard let number = SyscallTable.number(for: name) else {
                preconditionFailure("no syscall named \(name) in SyscallTable")
            }
            return number
        })

    enum State: Equatable {
        /// Parked in its idle wait: send nothing.
        case idle
        /// Running, or waiting somewhere else: a heartbeat tells how late it is.
        case busy
        /// The thread has exited (a libdispatch worker retires after ~5 s idle).
        case gone
    }

    let tid: Int32
    private let fd: Int32
    /// The highest SP seen in an idle call: the loop's own wait.
    private var idleStackPointer: UInt64 = 0
    private var buffer = [UInt8](repeating: 0, count: 256)

    init(tid: Int32) {
        self.tid = tid
        fd = open("/proc/self/task/\(tid)/syscall", O_RDONLY | O_CLOEXEC)
    }

    deinit { if fd >= 0 { close(fd) } }

    func state() -> State {
        guard fd >= 0 else { return .gone }
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return .gone }
        // "running", or "nr arg1 … arg6 sp pc" (the call's number, its arguments, user SP and PC).
        let fields = buffer[0..<n].split(whereSeparator: { $0 == 0x20 || $0 == 0x0A })
        guard fields.count == 9, let number = Int32(String(decoding: fields[0], as: UTF8.self)),
            Self.idleCalls.contains(number),
            let sp = UInt64(String(decoding: fields[7].dropFirst(2), as: UTF8.self), radix: 16)
        else { return .busy }
        if sp >= idleStackPointer {
            idleStackPointer = sp
            return .idle
        }
        return .busy
    }
}
