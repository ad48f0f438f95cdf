import Glibc
import StallwatchCore

/// Reads a thread's kernel counters from /proc/self/task/<tid>/stat (utime, stime, minflt,
/// majflt) and /proc/self/task/<tid>/io (rchar, wchar, read_bytes, write_bytes, syscr, syscw).
/// The files stay open and are re-read with pread (a few µs each). Watchdog thread only.
final class KernelCounterReader {
    private let stat: Int32
    private let io: Int32
    private let nanosPerTick: UInt64
    private var buffer = [UInt8](repeating: 0, count: 1024)

    init(tid: Int32) {
        let base = "/proc/self/task/\(tid)/"
        stat = open(base + "stat", O_RDONLY | O_CLOEXEC)
        io = open(base + "io", O_RDONLY | O_CLOEXEC)
        let ticks = sysconf(Int32(_SC_CLK_TCK))
        nanosPerTick = ticks > 0 ? 1_000_000_000 / UInt64(ticks) : 10_000_000
    }

    deinit {
        for fd in [stat, io] where fd >= 0 { close(fd) }
    }

    /// The counters now; nil when the stat file cannot be read (the thread exited). A missing
    /// io file (kernels without task I/O accounting) leaves its counters 0. Parses the bytes
    /// in place (no strings; byte constants as hex: `UInt8(ascii:)` costs in debug builds): it
    /// runs before every sample's stack capture.
    func read() -> KernelCounters? {
        var counters = KernelCounters()
        let ok = buffer.withUnsafeMutableBytes { raw -> Bool in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard stat >= 0 else { return false }
            let n = pread(stat, bytes.baseAddress, bytes.count, 0)
            guard n > 0, let close = bytes[..<n].lastIndex(of: 0x29) else { return false }
            // Fields after "(comm)": 3 state, 10 minflt, 12 majflt, 14 utime, 15 stime.
            var field = 2
            var index = close + 1
            while index < n, field < 15 {
                while index < n, bytes[index] == 0x20 { index += 1 }
                field += 1
                var value: UInt64 = 0
                while index < n, bytes[index] != 0x20 {
                    let digit = bytes[index] &- 0x30
                    if digit < 10 { value = value &* 10 &+ UInt64(digit) }
                    index += 1
                }
                switch field {
                case 10: counters.minorFaults = value
                case 12: counters.majorFaults = value
                case 14: counters.userNanos = value &* nanosPerTick
                case 15: counters.systemNanos = value &* nanosPerTick
                default: break
                }
            }
            guard field == 15 else { return false }
            guard io >= 0 else { return true }
            let m = pread(io, bytes.baseAddress, bytes.count, 0)
            // "rchar: N\nwchar: N\nsyscr: N\nsyscw: N\nread_bytes: N\nwrite_bytes: N\n…", in that order.
            var line = 0
            index = 0
            while index < m, line < 6 {
                while index < m, bytes[index] != 0x3A { index += 1 }
                index += 1
                while index < m, bytes[index] == 0x20 { index += 1 }
                var value: UInt64 = 0
                while index < m, bytes[index] != 0x0A {
                    let digit = bytes[index] &- 0x30
                    if digit < 10 { value = value &* 10 &+ UInt64(digit) }
                    index += 1
                }
                index += 1
                switch line {
                case 0: counters.readChars = value
                case 1: counters.writeChars = value
                case 2: counters.readSyscalls = value
                case 3: counters.writeSyscalls = value
                case 4: counters.readBytes = value
                default: counters.writeBytes = value
                }
                line += 1
            }
            return true
        }
        return ok ? counters : nil
    }
}
