import CStallwatchSampler
import CStallwatchShims
import Glibc
import StallwatchCore

/// Reads the stack of a thread blocked in a system call *without* interrupting it.
///
/// Why: a signal handler makes some blocking calls return EINTR even with SA_RESTART
/// (nanosleep/usleep, poll, select, epoll_wait, sigtimedwait, …: see signal(7)), so sampling
/// a thread that sleeps would cut its sleep short — the tool would change what it measures.
/// For those calls the watchdog takes the user PC and SP the kernel shows in
/// /proc/self/task/<tid>/syscall and unwinds the thread's stack (same address space) by its
/// CFI, as a signal-time unwind from the same registers would (`sw_scan_unwind`: libunwind's
/// remote API over this process's memory; RBP, which /proc does not show, from CFI where a
/// frame saved it, else from the frame that needs it). Code without frame pointers (libc,
/// libdispatch, `DispatchQueue.sync`) is unwound like any other. Only without libunwind, or
/// when the unwind gets no further than the PC, does it fall back to a heuristic: words that
/// are return addresses (inside an executable mapping and just after a call instruction)
/// below the first frame-pointer record, then the record chain — where a stale return address
/// can show up and a frame can be skipped. Samples from either are marked `.scan`.
/// Watchdog thread only. Package access for the benchmark (`stallwatch-bench scan`).
package final class StackScanner {
    /// Syscalls that return EINTR after a handler runs, whatever SA_RESTART says (signal(7)),
    /// by name: the numbers come from `SyscallTable`, the package's one syscall numbering.
    static let neverRestarted: Set<Int32> = Set(
        [
            "poll", "select", "pause", "nanosleep", "rt_sigtimedwait", "rt_sigsuspend", "io_getevents",
            "clock_nanosleep", "epoll_wait", "pselect6", "ppoll", "epoll_pwait", "epoll_pwait2",
        ].map { name in
            guard let number = SyscallTable.number(for: name) else {
                preconditionFailure("no syscall named \(name) in SyscallTable")
            }
            return number
        })

    private struct Mapping {
        var start: UInt64
        var end: UInt64
        var executable: Bool
    }

    private var mappings: [Mapping] = []
    private let syscall: ProcFile
    /// The unwind's output, allocated once.
    private var frames = [UInt](repeating: 0, count: Int(SW_SAMPLER_MAX_FRAMES))
    /// What the last CFI unwind did (how it learnt RBP, where it stopped), for tests.
    private(set) var lastUnwind = sw_scan_unwind_info()
    /// The async callers the last scan read (nil: its stack held no async frame).
    private(set) var lastChain: AsyncChain?
    /// How many awaiting callers the last scan read (the benchmark's).
    package var lastChainDepth: Int { lastChain?.resume.count ?? 0 }

    package init(tid: Int32) {
        syscall = ProcFile(tid: tid, "syscall")
        reloadMappings()
    }

    /// How a scan finds the frames above the PC.
    package enum Method: Sendable {
        /// By CFI (`sw_scan_unwind`), falling back to `heuristic` when it gets no further than
        /// the PC (no libunwind).
        case unwind
        /// Return-address-looking words, then the frame-record chain; kept for comparison.
        case heuristic
    }

    /// The PC (frame 0) and the return addresses of its callers; empty if the thread is running
    /// (it is no longer blocked in a system call or a page fault).
    package func scan(
        using method: Method = .unwind, maxFrames: Int = Int(SW_SAMPLER_MAX_FRAMES), maxBytes: UInt64 = 64 << 10
    ) -> [UInt64] {
        lastChain = nil
        guard let (sp, pc) = registers() else { return [] }
        if mapping(containing: pc) == nil { reloadMappings() }
        guard let stack = mapping(containing: sp) else { return [pc] }
        if method == .unwind {
            let unwound = unwind(pc: pc, sp: sp, stackEnd: stack.end, maxFrames: maxFrames)
            if unwound.count > 1 { return unwound }
        }
        return heuristicScan(pc: pc, sp: sp, stack: stack, maxFrames: maxFrames, maxBytes: maxBytes)
    }

    /// Frames unwound by CFI from `pc` and `sp` (`sw_scan_unwind`); just the PC without libunwind.
    private func unwind(pc: UInt64, sp: UInt64, stackEnd: UInt64, maxFrames: Int) -> [UInt64] {
        let capacity = min(maxFrames, frames.count)
        var chain = sw_async_chain()
        let count = frames.withUnsafeMutableBufferPointer { buffer in
            sw_scan_unwind_chain(pc, sp, stackEnd, buffer.baseAddress, Int32(capacity), &lastUnwind, &chain)
        }
        lastChain = AsyncChain(chain)
        guard count > 0 else { return [pc] }
        return frames[..<Int(count)].map { UInt64($0) }
    }

    /// Words above SP that are return addresses below the first frame-pointer record, then the
    /// record chain: the scan without CFI.
    private func heuristicScan(pc: UInt64, sp: UInt64, stack: Mapping, maxFrames: Int, maxBytes: UInt64) -> [UInt64] {
        var frames: [UInt64] = [pc]
        let start = sp & ~7
        let limit = min(stack.end, sp &+ maxBytes)
        guard limit > start else { return frames }
        var words = [UInt64](repeating: 0, count: Int((limit - start) / 8))
        let copied = words.withUnsafeMutableBytes { sw_read_memory(start, $0.baseAddress, UInt($0.count)) }
        guard copied > 0 else { return frames }
        let count = copied / 8
        // SwiftPM code keeps frame pointers; libc and libsqlite3 do not. So: scan the words
        // below the first frame-pointer record (the frames of libraries without them),
        // then follow the record chain, which skips stale return addresses.
        let chain = firstChain(in: words, count: count, base: start, limit: start + UInt64(count) * 8)
        for word in words[0..<(chain?.index ?? count)] where frames.count < maxFrames {
            if isReturnAddress(word) { frames.append(word) }
        }
        for address in chain?.returns ?? [] where frames.count < maxFrames { frames.append(address) }
        return frames
    }

    /// The lowest frame-pointer record on the stack — a saved RBP pointing further up the
    /// stack, next to a return address — that starts a chain of at least three such records.
    private func firstChain(in words: [UInt64], count: Int, base: UInt64, limit: UInt64)
        -> (index: Int, returns: [UInt64])?
    {
        func record(at index: Int) -> (next: UInt64, returnAddress: UInt64)? {
            guard index + 1 < count else { return nil }
            let saved = words[index]
            let address = base + UInt64(index) * 8
            guard saved > address, saved < limit, saved & 7 == 0, isReturnAddress(words[index + 1]) else {
                return nil
            }
            return (saved, words[index + 1])
        }
        for index in 0..<count {
            var returns: [UInt64] = []
            var current = index
            while let (next, returnAddress) = record(at: current), returns.count < 256 {
                returns.append(returnAddress)
                current = Int((next - base) / 8)
            }
            // The outermost record's saved RBP is 0 (or leaves the window): count it too.
            if current + 1 < count, words[current] == 0, isReturnAddress(words[current + 1]) {
                returns.append(words[current + 1])
            }
            if returns.count >= 3 { return (index, returns) }
        }
        return nil
    }

    /// The user SP and PC `/proc` shows while the thread sleeps in a syscall or is blocked
    /// outside one (a page fault being read in); nil while it runs.
    private func registers() -> (UInt64, UInt64)? {
        var buffer = [UInt8](repeating: 0, count: 256)
        guard let line = SyscallLine.read(syscall, into: &buffer).line, let sp = line.stackPointer,
            let pc = line.programCounter
        else { return nil }
        return (sp, pc)
    }

    private func isReturnAddress(_ value: UInt64) -> Bool {
        guard value > 4096, let map = mapping(containing: value), map.executable, value - 5 >= map.start else {
            return false
        }
        let bytes = UnsafePointer<UInt8>(bitPattern: UInt(value - 7))!
        // call rel32 (E8 xx xx xx xx), or an indirect call FF /2 ending just before `value`:
        // register (FF D0+r), [reg] (FF 10+r), [reg+disp8] (FF 50+r xx), [rip+disp32] (FF 15 …).
        if value - 7 < map.start { return bytes[2] == 0xE8 }
        if bytes[2] == 0xE8 { return true }
        if bytes[5] == 0xFF && (bytes[6] & 0xF8 == 0xD0 || bytes[6] & 0xF8 == 0x10) { return true }
        if bytes[4] == 0xFF && bytes[5] & 0xF8 == 0x50 { return true }
        if bytes[1] == 0xFF && (bytes[2] == 0x15 || bytes[2] & 0xF8 == 0x90) { return true }
        return false
    }

    private func mapping(containing address: UInt64) -> Mapping? {
        let index = mappings.partitioningIndex { $0.end > address }
        return index < mappings.count && mappings[index].start <= address ? mappings[index] : nil
    }

    private func reloadMappings() {
        guard let file = fopen("/proc/self/maps", "r") else { return }
        defer { fclose(file) }
        var result: [Mapping] = []
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        while getline(&line, &capacity, file) > 0 {
            let text = String(cString: line!)
            let parts = text.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2 else { continue }
            let range = parts[0].split(separator: "-")
            guard range.count == 2, let start = UInt64(hex: range[0]), let end = UInt64(hex: range[1]) else {
                continue
            }
            let permissions = parts[1]
            guard permissions.first == "r" else { continue }
            result.append(Mapping(start: start, end: end, executable: permissions.dropFirst(2).first == "x"))
        }
        free(line)
        mappings = result.sorted { $0.start < $1.start }
    }
}

extension UInt64 {
    init?(hex: Substring) {
        self.init(hex.hasPrefix("0x") ? hex.dropFirst(2) : hex, radix: 16)
    }
}
