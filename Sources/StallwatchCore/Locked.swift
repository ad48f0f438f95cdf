#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value behind a pthread mutex: the package's one lock type, in every module.
///
/// Why not `Synchronization.Mutex`: the toolchain's Synchronization module is not built for
/// ThreadSanitizer, so TSan cannot see its lock and reports every access it guards as a race
/// (measured: `FrameCache` under `--sanitize=thread`). pthread mutexes it intercepts. One lock
/// type everywhere keeps that reason in one place. Any thread.
package final class Locked<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// A lock guarding `value`.
    package init(_ value: consuming Value) {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    package func withLock<Result: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
