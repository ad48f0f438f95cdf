import CStallwatchShims
import Glibc
import StallwatchCore

/// Finds who holds the lock behind a futex wait, from the futex address in the syscall's
/// arguments and the process's own memory (read with process_vm_readv, so a stale or bad
/// address fails cleanly instead of crashing). Watchdog thread only.
///
/// What is knowable:
/// - A PI futex (`FUTEX_LOCK_PI`, Synchronization.Mutex): the futex word *is* the owner's tid.
/// - A plain `FUTEX_WAIT` on a glibc `pthread_mutex_t` (NSLock is one): the futex word is the
///   mutex's `__lock` (1 locked, 2 contended) and `__data.__owner`, 8 bytes on (x86_64
///   glibc), is the owner's tid. A wait is taken as a mutex wait only when the word is 1 or 2
///   and the tid is another live thread of this process.
/// - Any other futex wait (condition variable, semaphore, DispatchSemaphore/Group, dispatch
///   sync): the word is a counter or sequence, not an owner, so nothing says who will wake it.
enum FutexProbe {
    private static let commandMask: UInt64 = 0x7F  // FUTEX_CMD_MASK: drop PRIVATE and CLOCK_REALTIME
    private static let lockPI: Set<UInt64> = [6, 13]  // FUTEX_LOCK_PI, FUTEX_LOCK_PI2
    private static let wait: Set<UInt64> = [0, 9]  // FUTEX_WAIT, FUTEX_WAIT_BITSET

    /// The fact for a futex wait at `address` with operation `operation` by thread `waiter`.
    static func probe(address: UInt64, operation: UInt64, waiter: Int32) -> WaitFact {
        var fact = WaitFact(kind: .futex, operation: "futex", address: address)
        let command = operation & commandMask
        var words = (UInt32(0), UInt32(0), UInt32(0), UInt32(0))
        let copied = withUnsafeMutableBytes(of: &words) { sw_read_memory(address, $0.baseAddress, UInt($0.count)) }
        guard copied >= 4 else { return fact }
        var owner: Int32?
        if lockPI.contains(command) {
            owner = Int32(bitPattern: words.0 & 0x3FFF_FFFF)
        } else if wait.contains(command), copied >= 12, words.0 == 1 || words.0 == 2 {
            owner = Int32(bitPattern: words.2)
        }
        guard let tid = owner, tid > 0, tid != waiter, let name = ProcFile.threadName(tid) else { return fact }
        fact.kind = .mutex
        fact.owner = WaitFact.Owner(tid: tid, name: name)
        return fact
    }

}
