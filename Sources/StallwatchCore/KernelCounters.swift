/// The loop thread's kernel counters at one sample, from `/proc/self/task/<tid>/stat`
/// (utime, stime, minflt, majflt) and `/proc/self/task/<tid>/io` (the rest). A `Sample` carries
/// the reading and its delta since the previous sample of the same stall; the classifier's
/// `cpu` and `minDelta` conditions test the delta.
///
/// A plain value; use it on any thread.
public struct KernelCounters: Sendable, Hashable, Codable {
    /// CPU time in user mode, in nanoseconds (the kernel counts it in clock ticks, 10 ms).
    public var userNanos: UInt64 = 0
    /// CPU time in the kernel on the thread's behalf, in nanoseconds (clock ticks too).
    public var systemNanos: UInt64 = 0
    /// Page faults served without I/O.
    public var minorFaults: UInt64 = 0
    /// Page faults that had to read the page (from a file or swap).
    public var majorFaults: UInt64 = 0
    /// Bytes returned by read-like syscalls (`rchar`; counted when each syscall returns).
    public var readChars: UInt64 = 0
    /// Bytes passed to write-like syscalls (`wchar`; counted when each syscall returns).
    public var writeChars: UInt64 = 0
    /// Bytes this thread caused to be fetched from storage (`read_bytes`; counted as the I/O
    /// is submitted, so it moves during one long `read()` or page fault).
    public var readBytes: UInt64 = 0
    /// Bytes this thread dirtied for storage (`write_bytes`; counted as pages are dirtied, so
    /// it moves during one long buffered `write()`).
    public var writeBytes: UInt64 = 0
    /// Read-like syscalls completed (`syscr`).
    public var readSyscalls: UInt64 = 0
    /// Write-like syscalls completed (`syscw`).
    public var writeSyscalls: UInt64 = 0

    /// All zero.
    public init() {}

    /// The counters in their fixed order (the trace stores them so).
    public var values: [UInt64] {
        KernelCounter.allCases.map { self[$0] }
    }

    /// The counters from `values` in their fixed order; missing ones are 0.
    public init(values: [UInt64]) {
        for (counter, value) in zip(KernelCounter.allCases, values) { self[counter] = value }
    }

    /// One counter by name.
    public subscript(counter: KernelCounter) -> UInt64 {
        get {
            switch counter {
            case .userTime: userNanos
            case .systemTime: systemNanos
            case .minorFaults: minorFaults
            case .majorFaults: majorFaults
            case .readChars: readChars
            case .writeChars: writeChars
            case .readBytes: readBytes
            case .writeBytes: writeBytes
            case .readSyscalls: readSyscalls
            case .writeSyscalls: writeSyscalls
            }
        }
        set {
            switch counter {
            case .userTime: userNanos = newValue
            case .systemTime: systemNanos = newValue
            case .minorFaults: minorFaults = newValue
            case .majorFaults: majorFaults = newValue
            case .readChars: readChars = newValue
            case .writeChars: writeChars = newValue
            case .readBytes: readBytes = newValue
            case .writeBytes: writeBytes = newValue
            case .readSyscalls: readSyscalls = newValue
            case .writeSyscalls: writeSyscalls = newValue
            }
        }
    }

    /// `self - earlier`, counter by counter; a counter that went backwards gives 0.
    public func delta(since earlier: KernelCounters) -> KernelCounters {
        var result = KernelCounters()
        for counter in KernelCounter.allCases {
            let (now, then) = (self[counter], earlier[counter])
            result[counter] = now >= then ? now - then : 0
        }
        return result
    }

    /// Which CPU time grew more over a delta: `.system` when system time is at least user
    /// time (ties included, see `CPUShare`), else `.user`.
    public var cpuShare: CPUShare {
        systemNanos >= userNanos ? .system : .user
    }
}

/// One of the counters of `KernelCounters`, by its rules-file name. Raw values are the names.
///
/// A plain value; use it on any thread.
public enum KernelCounter: String, CaseIterable, Sendable, Hashable, Codable {
    case userTime, systemTime, minorFaults, majorFaults, readChars, writeChars, readBytes,
        writeBytes, readSyscalls, writeSyscalls
}

/// Where a sample interval's CPU time went, as the rules' `cpu` condition names it.
///
/// utime and stime advance in clock ticks (10 ms), so over a shorter interval both may stay
/// still: then the kernel cannot say, and `system` holds (a rule with `cpu: "system"` also
/// needs something else, e.g. bytes moving, so this alone never makes a sample I/O).
///
/// A plain value; use it on any thread.
public enum CPUShare: String, CaseIterable, Sendable, Hashable, Codable {
    /// User time grew more than system time.
    case user
    /// System time grew at least as much as user time.
    case system
}

extension KernelCounter {
    // The raw-value defaults compare and hash the name, a String (as `StallCategory`'s did).

    /// Whether two counters are the same case. Pure; any thread.
    public static func == (lhs: KernelCounter, rhs: KernelCounter) -> Bool { lhs.ordinal == rhs.ordinal }

    /// Hashes the case, not its name. Pure; any thread.
    public func hash(into hasher: inout Hasher) { hasher.combine(ordinal) }

    /// The case's position in `allCases`.
    var ordinal: Int {
        switch self {
        case .userTime: 0
        case .systemTime: 1
        case .minorFaults: 2
        case .majorFaults: 3
        case .readChars: 4
        case .writeChars: 5
        case .readBytes: 6
        case .writeBytes: 7
        case .readSyscalls: 8
        case .writeSyscalls: 9
        }
    }
}
