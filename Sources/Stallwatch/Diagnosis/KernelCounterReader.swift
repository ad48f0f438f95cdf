import Glibc
import StallwatchCore

/// Reads a thread's kernel counters from /proc/self/task/<tid>/stat (utime, stime, minflt,
/// majflt) and /proc/self/task/<tid>/io (rchar, wchar, read_bytes, write_bytes, syscr, syscw).
/// The files stay open and are re-read with pread (a few µs each). Watchdog thread only.
final class KernelCounterReader {
    private let stat: ProcFile
    private let io: ProcFile
    private let nanosPerTick: UInt64
    private var buffer = [UInt8](repeating: 0, count: 1024)

    init(tid: Int32) {
        stat = ProcFile(tid: tid, "stat")
        io = ProcFile(tid: tid, "io")
        let ticks = sysconf(Int32(_SC_CLK_TCK))
        nanosPerTick = ticks > 0 ? 1_000_000_000 / UInt64(ticks) : 10_000_000
    }

    /// The counters now; nil when the stat file cannot be read (the thread exited). A missing
    /// io file (kernels without task I/O accounting) leaves its counters 0. Parses the bytes
    /// in place (no strings; byte constants as hex: `UInt8(ascii:)` costs in debug builds): it
    /// runs before every sample's stack capture.
    func read() -> KernelCounters? {
        var counters = KernelCounters()
        // Fields 10 minflt, 12 majflt, 14 utime, 15 stime.
        let nanosPerTick = nanosPerTick
        let complete = ProcStat.read(stat, into: &buffer, through: 15) { field, bytes in
            switch field {
            case 10: counters.minorFaults = ProcStat.decimal(bytes)
            case 12: counters.majorFaults = ProcStat.decimal(bytes)
            case 14: counters.userNanos = ProcStat.decimal(bytes) &* nanosPerTick
            case 15: counters.systemNanos = ProcStat.decimal(bytes) &* nanosPerTick
            default: break
            }
        }
        guard complete else { return nil }
        _ = io.read(into: &buffer) { bytes in
            let m = bytes.count
            // "rchar: N\nwchar: N\nsyscr: N\nsyscw: N\nread_bytes: N\nwrite_bytes: N\n…", in that order.
            var line = 0
            var index = 0
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
        }
        return counters
    }
}
