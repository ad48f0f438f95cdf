import CStallwatchShims
import Glibc

/// Finds the queue a blocked `DispatchQueue.sync` waits for, and the thread running that queue's
/// block now, from the waiter's own stack (read with process_vm_readv, so a stale or bad word
/// fails cleanly). Watchdog thread only.
///
/// A blocked `sync` (libdispatch's `__DISPATCH_WAIT_FOR_QUEUE__`) waits on a futex word inside a
/// `dispatch_sync_context_s` on its own stack, a few hundred bytes above its SP; a semaphore's or
/// a condition's word is on the heap. Nothing in that context points at the queue, but the
/// waiting frames keep the queue in registers that they or their callees save on the stack, near
/// the futex word. A word there is taken for the queue when it points at a libdispatch object
/// (its first word, the vtable, lies in libdispatch) whose `dq_state` holds a drain lock owned by
/// another live thread of the process: the thread that runs the queue's block now. The layout is
/// swift-corelibs-libdispatch's on Linux x86_64 without Objective-C (`_DISPATCH_QUEUE_CLASS_HEADER`:
/// vtable, two reference counts, four pointers, one more pointer, then `dq_state`, `dq_serialnum`,
/// `dq_label`); the lock's owner is `dq_state`'s low word masked with FUTEX_TID_MASK.
enum DispatchQueueProbe {
    /// A queue some thread runs, as found.
    struct Queue: Equatable {
        var address: UInt64
        var label: String?
        var owner: Int32
    }

    /// Bytes searched on each side of the futex word.
    static let reach: UInt64 = 1024
    private static let stateOffset = 7  // words: dq_state at byte 56
    private static let labelOffset = 9  // dq_label at byte 72
    private static let ownerMask: UInt64 = 0x3FFF_FFFF  // FUTEX_TID_MASK

    /// The queue that thread `waiter`, blocked on the futex word at `futex` with stack pointer
    /// `stackPointer`, waits for; nil unless the word is on its stack and a queue run by another
    /// thread is found next to it.
    static func probe(futex: UInt64, stackPointer: UInt64, waiter: Int32) -> Queue? {
        guard futex >= stackPointer, futex - stackPointer < 64 << 10 else { return nil }
        let start = max(stackPointer, futex - reach) & ~7
        var words = [UInt64](repeating: 0, count: Int((futex + reach - start) / 8))
        let copied = words.withUnsafeMutableBytes { sw_read_memory(start, $0.baseAddress, UInt($0.count)) }
        guard copied > 0 else { return nil }
        var tried: Set<UInt64> = []
        for word in words.prefix(copied / 8) where word > 4096 && word & 7 == 0 && tried.insert(word).inserted {
            if let queue = queue(at: word, waiter: waiter) { return queue }
        }
        return nil
    }

    /// The queue at `address`, if it is one that another live thread of the process drains.
    private static func queue(at address: UInt64, waiter: Int32) -> Queue? {
        var header = [UInt64](repeating: 0, count: labelOffset + 1)
        let copied = header.withUnsafeMutableBytes { sw_read_memory(address, $0.baseAddress, UInt($0.count)) }
        guard copied == header.count * 8 else { return nil }
        let owner = Int32(header[stateOffset] & ownerMask)
        guard owner > 0, owner != waiter, isLibdispatch(header[0]), ProcFile.threadName(owner) != nil else {
            return nil
        }
        return Queue(address: address, label: string(at: header[labelOffset]), owner: owner)
    }

    /// Whether `address` lies in libdispatch's image (a vtable of its objects does).
    private static func isLibdispatch(_ address: UInt64) -> Bool {
        DynamicLoader.symbol(at: address)?.image?.hasSuffix("/libdispatch.so") == true
    }

    /// The NUL-terminated string at `address` (up to 256 bytes), if readable.
    private static func string(at address: UInt64) -> String? {
        guard address > 4096 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 256)
        let copied = bytes.withUnsafeMutableBytes { sw_read_memory(address, $0.baseAddress, UInt($0.count)) }
        guard copied > 0, let end = bytes.prefix(copied).firstIndex(of: 0) else { return nil }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }
}
