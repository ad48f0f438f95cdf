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
    /// io file (kernels without task I/O accounting) leaves its counters 0.
    func read() -> KernelCounters? {
        guard let text = contents(stat), let close = text.lastIndex(of: ")") else { return nil }
        // Fields after "(comm)": 3 state, 10 minflt, 12 majflt, 14 utime, 15 stime.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12 else { return nil }
        var counters = KernelCounters()
        counters.minorFaults = UInt64(fields[7]) ?? 0
        counters.majorFaults = UInt64(fields[9]) ?? 0
        counters.userNanos = (UInt64(fields[11]) ?? 0) &* nanosPerTick
        counters.systemNanos = (UInt64(fields[12]) ?? 0) &* nanosPerTick
        if let text = contents(io) {
            for line in text.split(separator: "\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let value = UInt64(line[line.index(after: colon)...].drop { $0 == " " }) ?? 0
                switch line[..<colon] {
                case "rchar": counters.readChars = value
                case "wchar": counters.writeChars = value
                case "syscr": counters.readSyscalls = value
                case "syscw": counters.writeSyscalls = value
                case "read_bytes": counters.readBytes = value
                case "write_bytes": counters.writeBytes = value
                default: break
                }
            }
        }
        return counters
    }

    private func contents(_ fd: Int32) -> Substring? {
        guard fd >= 0 else { return nil }
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        return Substring(String(decoding: buffer[0..<n], as: UTF8.self))
    }
}
