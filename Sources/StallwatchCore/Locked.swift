import Glibc

/// A value behind a pthread mutex. Used instead of `Synchronization.Mutex` because the
/// toolchain's Synchronization module is not built for ThreadSanitizer, so TSan cannot see
/// its lock and reports every access it guards as a race; pthread mutexes it intercepts.
/// (`scripts/sanitize.sh thread` found exactly that in `FrameCache`.) Any thread.
package final class Locked<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: consuming Value) {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func withLock<Result: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
