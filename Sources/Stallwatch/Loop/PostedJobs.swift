// Posted closures: the loop thread's own FIFO (`JobRing`) and the queue other threads post into
// (`RemoteQueue`).

import StallwatchCore
import Synchronization

/// A posted closure and where it was posted from.
struct Job: Sendable {
    var body: @Sendable () -> Void
    var site: CalloutSite
}

extension CalloutSite: @unchecked Sendable {}

/// The loop thread's own FIFO of posted closures: a growable ring, touched only by the loop
/// thread, so a same-thread post is a move into the ring and an index bump (no lock, no
/// syscall). It lives behind an unsafe pointer owned by the loop so the hot path pays no
/// dynamic exclusivity checks (the loop thread is its only user).
struct JobRing {
    private var storage: UnsafeMutablePointer<Job>
    private var capacity: Int
    private var head = 0
    private(set) var count = 0

    static func make(capacity: Int = 256) -> UnsafeMutablePointer<JobRing> {
        let ring = UnsafeMutablePointer<JobRing>.allocate(capacity: 1)
        ring.initialize(to: JobRing(storage: .allocate(capacity: capacity), capacity: capacity))
        return ring
    }

    private init(storage: UnsafeMutablePointer<Job>, capacity: Int) {
        self.storage = storage
        self.capacity = capacity
    }

    static func destroy(_ ring: UnsafeMutablePointer<JobRing>) {
        while ring.pointee.popFirst() != nil {}
        ring.pointee.storage.deallocate()
        ring.deinitialize(count: 1)
        ring.deallocate()
    }

    @inline(__always)
    mutating func append(_ job: consuming Job) {
        if count == capacity { grow() }
        (storage + ((head + count) & (capacity - 1))).initialize(to: job)
        count += 1
    }

    @inline(__always)
    mutating func popFirst() -> Job? {
        guard count > 0 else { return nil }
        let job = (storage + head).move()
        head = (head + 1) & (capacity - 1)
        count -= 1
        return job
    }

    private mutating func grow() {
        let bigger = UnsafeMutablePointer<Job>.allocate(capacity: capacity * 2)
        for index in 0..<count {
            (bigger + index).initialize(to: (storage + ((head + index) & (capacity - 1))).move())
        }
        storage.deallocate()
        storage = bigger
        capacity *= 2
        head = 0
    }
}

/// Closures posted from other threads: appended under a mutex, taken by the loop in one swap
/// per iteration. `count` mirrors the length so the loop can decide to sleep without the lock.
final class RemoteQueue: Sendable {
    private let jobs = Locked<[Job]>([])
    let count = Atomic<Int>(0)

    /// Any thread. Returns after the job is visible to the loop.
    func append(_ job: consuming Job) {
        let job = job
        jobs.withLock { $0.append(job) }
        count.add(1, ordering: .sequentiallyConsistent)
    }

    /// Loop thread: moves everything queued so far into `ring`, in order.
    func drain(into ring: UnsafeMutablePointer<JobRing>, spare: inout [Job]) {
        guard count.load(ordering: .relaxed) > 0 else { return }
        jobs.withLock { swap(&$0, &spare) }
        count.subtract(spare.count, ordering: .sequentiallyConsistent)
        for job in spare { ring.pointee.append(job) }
        spare.removeAll(keepingCapacity: true)
    }
}
