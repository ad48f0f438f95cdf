import Glibc

/// One file of `/proc` (proc(5)), opened once and read from its start with `pread`, as often as
/// its owner looks: the one owner of such a descriptor (the thread-state and kernel-counter
/// readers, the stack scanner and the idle probe keep theirs for a thread's life). Closed with
/// its owner. Any thread; one at a time.
struct ProcFile: ~Copyable {
    /// The descriptor; -1 when the file could not be opened (the thread has exited, or the kernel
    /// has no such file), and then every read fails.
    private let fd: Int32

    /// Opens `path`.
    init(_ path: String) {
        fd = open(path, O_RDONLY | O_CLOEXEC)
    }

    /// Opens `name` of thread `tid` of this process (`/proc/self/task/<tid>/<name>`).
    init(tid: Int32, _ name: String) {
        self.init("/proc/self/task/\(tid)/\(name)")
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Reads the file from its start into `buffer` (at most its size) and calls `body` with the
    /// bytes read; nil when nothing could be read (the thread has exited). One `pread`, no
    /// allocation.
    func read<Result>(into buffer: inout [UInt8], _ body: (UnsafeRawBufferPointer) -> Result) -> Result? {
        guard fd >= 0 else { return nil }
        return buffer.withUnsafeMutableBytes { raw in
            let count = pread(fd, raw.baseAddress, raw.count, 0)
            guard count > 0 else { return nil }
            return body(UnsafeRawBufferPointer(rebasing: raw[..<count]))
        }
    }

    /// Thread `tid`'s name (`/proc/self/task/<tid>/comm`), nil if no such thread in this
    /// process. Any thread.
    static func threadName(_ tid: Int32) -> String? { name("/proc/self/task/\(tid)/comm") }

    /// The name a `comm` file holds (`/proc/self/comm`, a thread's), without its line break; nil
    /// when it cannot be read. Any thread.
    static func name(_ path: String) -> String? {
        var buffer = [UInt8](repeating: 0, count: 64)
        return ProcFile(path).read(into: &buffer) { bytes in
            var name = bytes[...]
            while name.last == 0x0A { name = name.dropLast() }
            return String(decoding: name, as: UTF8.self)
        }
    }
}

/// One read of `/proc/<pid>/task/<tid>/syscall` (proc(5)), parsed in place without allocating:
/// the one reader of that format (the thread-state reader, the stack scanner and the idle probe
/// all read it through this).
///
/// The kernel writes `running` while the thread is on a CPU or waiting for one; `-1 sp pc` while
/// it is blocked outside a syscall (a page fault being read in); and `nr arg1 … arg6 sp pc`
/// while it sleeps in syscall `nr` (the number in decimal, the rest in hex). A plain value; any
/// thread.
struct SyscallLine: Equatable {
    enum Place: Equatable {
        /// On a CPU or waiting for one: `/proc` shows no registers.
        case running
        /// Blocked outside a syscall (`-1`).
        case outside
        /// Sleeping in the syscall with this number.
        case inCall(Int32)
    }

    var place: Place
    /// The syscall's first two arguments (`inCall` only; 0 otherwise).
    var arguments: (UInt64, UInt64) = (0, 0)
    /// The user stack pointer and program counter (nil while running).
    var stackPointer: UInt64?
    var programCounter: UInt64?

    /// The line in `bytes`; nil when it is not in the format above.
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard let first = bytes.first else { return nil }
        if first == 0x72 {  // "r": only `running` starts with a letter
            place = .running
            return
        }
        // Up to nine fields: the number (decimal, maybe -1), then hex words (`0x…`).
        var number: UInt64 = 0
        var words: (first: UInt64, second: UInt64, seventh: UInt64, eighth: UInt64) = (0, 0, 0, 0)
        let negative = first == 0x2D  // "-"
        var field = 0
        var index = negative ? 1 : 0
        while index < bytes.count && field < 9 {
            let hex = index + 1 < bytes.count && bytes[index] == 0x30 && bytes[index + 1] == 0x78  // "0x"
            if hex { index += 2 }
            var value: UInt64 = 0
            var digits = 0
            while index < bytes.count, let digit = Self.digit(bytes[index], hex: hex) {
                value = value &* (hex ? 16 : 10) &+ UInt64(digit)
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            switch field {
            case 0: number = value
            case 1: words.first = value
            case 2: words.second = value
            case 7: words.seventh = value
            case 8: words.eighth = value
            default: break
            }
            field += 1
            guard index == bytes.count || bytes[index] == 0x20 || bytes[index] == 0x0A else { return nil }
            if index < bytes.count && bytes[index] == 0x0A { break }
            index += 1
        }
        if negative {
            // "-1 sp pc"
            guard number == 1, field == 3 else { return nil }
            place = .outside
            stackPointer = words.first
            programCounter = words.second
            return
        }
        guard field == 9, number <= UInt64(Int32.max) else { return nil }
        place = .inCall(Int32(number))
        arguments = (words.first, words.second)
        stackPointer = words.seventh
        programCounter = words.eighth
    }

    /// Reads `file` into `buffer` and parses it. `readable` is false when the read failed (the
    /// thread has exited); then the line is nil too.
    static func read(_ file: borrowing ProcFile, into buffer: inout [UInt8]) -> (readable: Bool, line: SyscallLine?) {
        file.read(into: &buffer) { (true, SyscallLine($0)) } ?? (false, nil)
    }

    static func == (a: SyscallLine, b: SyscallLine) -> Bool {
        a.place == b.place && a.arguments == b.arguments && a.stackPointer == b.stackPointer
            && a.programCounter == b.programCounter
    }

    private static func digit(_ byte: UInt8, hex: Bool) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x61...0x66 where hex: byte - 0x61 + 10
        default: nil
        }
    }
}

/// The fields of `/proc/<pid>/stat` and `/proc/<pid>/task/<tid>/stat` (proc(5)), read in place
/// without allocating: the one reader of that format. The command name (field 2) may hold spaces
/// and parentheses, so the fields are counted from the last `)`. Any thread.
enum ProcStat {
    /// Calls `body` with each field from 3 (the state letter) through `last`, numbered as proc(5)
    /// numbers them, and its bytes. False when the text ends before field `last`.
    static func fields(
        _ bytes: UnsafeRawBufferPointer, through last: Int, _ body: (Int, UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        guard let close = bytes.lastIndex(of: 0x29) else { return false }  // ")"
        var field = 2
        var index = close + 1
        while index < bytes.count && field < last {
            while index < bytes.count && bytes[index] == 0x20 { index += 1 }
            let start = index
            while index < bytes.count && bytes[index] != 0x20 && bytes[index] != 0x0A { index += 1 }
            guard index > start else { break }
            field += 1
            body(field, UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        }
        return field == last
    }

    /// A field's decimal value (a counter or a tick count).
    static func decimal(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var value: UInt64 = 0
        for byte in bytes {
            let digit = byte &- 0x30
            if digit < 10 { value = value &* 10 &+ UInt64(digit) }
        }
        return value
    }

    /// Reads `file` into `buffer` and calls `body` with its fields 3 through `last`; false when
    /// it cannot be read or is too short.
    static func read(
        _ file: borrowing ProcFile, into buffer: inout [UInt8], through last: Int,
        _ body: (Int, UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        file.read(into: &buffer) { fields($0, through: last, body) } ?? false
    }
}
