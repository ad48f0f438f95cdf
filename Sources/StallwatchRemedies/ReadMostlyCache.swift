import Glibc
import Stallwatch
import StallwatchCore

/// A dictionary for values read far more often than written (parsed configuration, decoded
/// thumbnails, interned strings): readers run concurrently, a writer runs alone, behind one
/// `pthread_rwlock_t` that prefers writers, so a steady stream of readers cannot starve a writer.
///
/// Any thread may call every member. No callback runs with the lock held: `make` in
/// `value(forKey:orInsert:)` runs on the calling thread before the lock is taken, and replaced
/// or removed values are released after it is dropped, so either may use the cache itself.
public final class ReadMostlyCache<Key: Hashable & Sendable, Value: Sendable>: @unchecked Sendable {
    // @unchecked: `storage` is only read with `lock` held shared and only written with it held
    // exclusively.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>
    private var storage: [Key: Value] = [:]

    /// Creates an empty cache. Any thread.
    public init() {
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        // glibc's default kind prefers readers: overlapping readers keep a writer out forever.
        // PREFER_WRITER_NP is ignored by glibc (POSIX recursive read locks would deadlock with
        // it); the NONRECURSIVE kind makes new readers queue behind a waiting writer. Its price,
        // a thread must never take the read lock twice, is kept inside this file.
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        let status = pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
        require(status == 0, "pthread_rwlock_init failed with \(status)")
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// The value stored for `key`, if any. Any thread; runs alongside other readers.
    public func value(forKey key: Key) -> Value? {
        withReadLock { storage[key] }
    }

    /// The value stored for `key`, or else the one `make` returns, stored. `make` runs on the
    /// calling thread without the lock held (it may be slow, and may use this cache); if another
    /// thread stores a value for `key` meanwhile, the first value stored wins: this returns it
    /// and discards what `make` returned. If `make` throws, nothing is stored. Any thread.
    public func value(forKey key: Key, orInsert make: () throws -> Value) rethrows -> Value {
        if let existing = value(forKey: key) { return existing }
        let made = try make()
        return withWriteLock {
            if let winner = storage[key] { return winner }
            storage[key] = made
            return made
        }
    }

    /// Stores `value` for `key`, replacing any value stored. Any thread; waits for readers
    /// and writers in progress.
    public func setValue(_ value: Value, forKey key: Key) {
        // Returned, not dropped inside, so that the replaced value's deinit runs unlocked.
        _ = withWriteLock { storage.updateValue(value, forKey: key) }
    }

    /// Removes the value stored for `key` and returns it. Any thread.
    @discardableResult
    public func removeValue(forKey key: Key) -> Value? {
        withWriteLock { storage.removeValue(forKey: key) }
    }

    /// Removes every value. Any thread.
    public func removeAll() {
        // Moved out, not cleared inside, so that the old values' deinits run unlocked.
        _ = withWriteLock { () -> [Key: Value] in
            var removed: [Key: Value] = [:]
            swap(&removed, &storage)
            return removed
        }
    }

    /// The number of values stored. Any thread.
    public var count: Int {
        withReadLock { storage.count }
    }

    /// Runs `body` holding the lock shared. `body` must not take the lock again: with a writer
    /// waiting, a second read lock on the same thread deadlocks. Tests use it to hold a read
    /// section open.
    func withReadLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        let status = pthread_rwlock_rdlock(lock)
        require(status == 0, "pthread_rwlock_rdlock failed with \(status)")
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Runs `body` holding the lock exclusively; `body` must not take the lock again.
    func withWriteLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        let status = pthread_rwlock_wrlock(lock)
        require(status == 0, "pthread_rwlock_wrlock failed with \(status)")
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Whether a reader could enter right now without waiting; takes and drops the read lock if
    /// so. Tests use it to see that a waiting writer holds new readers back.
    func readerCouldEnter() -> Bool {
        guard pthread_rwlock_tryrdlock(lock) == 0 else { return false }
        pthread_rwlock_unlock(lock)
        return true
    }

    /// Whether a writer could enter right now without waiting; takes and drops the write lock if
    /// so. Tests use it to see that `make` runs without the lock held.
    func writerCouldEnter() -> Bool {
        guard pthread_rwlock_trywrlock(lock) == 0 else { return false }
        pthread_rwlock_unlock(lock)
        return true
    }
}
