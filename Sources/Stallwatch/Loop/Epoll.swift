// The loop's Linux backend: epoll and eventfd, and the translation between epoll's event bits
// and `MainLoop.SourceEvents`. No other file of the loop names an `EPOLL*` constant.

import CStallwatchShims
import Glibc
import StallwatchCore

/// One epoll instance (a mode's interest set), spoken to in `SourceEvents`, plus eventfd
/// helpers. Internal, loop-thread only.
struct Epoll {
    let fd: Int32

    init() throws {
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw SystemError(call: "epoll_create1", errno: Glibc.errno) }
        self.fd = fd
    }

    func close() { _ = Glibc.close(fd) }

    /// Starts watching `target` for `interest`; `tag` comes back with each of its events.
    func add(_ target: Int32, _ interest: MainLoop.SourceEvents, tag: UInt64) throws {
        try control(EPOLL_CTL_ADD, "ADD", target, interest, tag: tag)
    }

    /// Replaces what `target` is watched for.
    func modify(_ target: Int32, _ interest: MainLoop.SourceEvents, tag: UInt64) throws {
        try control(EPOLL_CTL_MOD, "MOD", target, interest, tag: tag)
    }

    /// Stops watching `target`.
    func remove(_ target: Int32) throws {
        try control(EPOLL_CTL_DEL, "DEL", target, [], tag: 0)
    }

    private func control(_ op: Int32, _ name: String, _ target: Int32, _ interest: MainLoop.SourceEvents, tag: UInt64)
        throws
    {
        var event = epoll_event()
        event.events = interest.epollInterest
        event.data.u64 = tag
        if epoll_ctl(fd, op, target, &event) != 0 {
            throw SystemError(call: "epoll_ctl(\(name), fd \(target))", errno: Glibc.errno)
        }
    }

    /// Room for the events of one wait; one per nesting depth of the loop.
    struct EventBuffer {
        fileprivate let events: UnsafeMutablePointer<epoll_event>
        let capacity: Int32

        init(capacity: Int32) {
            events = .allocate(capacity: Int(capacity))
            self.capacity = capacity
        }

        func deallocate() { events.deallocate() }

        /// The `index`th event of the last wait: the tag it was registered with, and what happened.
        subscript(index: Int) -> (tag: UInt64, events: MainLoop.SourceEvents) {
            (events[index].data.u64, MainLoop.SourceEvents(epollEvents: events[index].events))
        }
    }

    /// Waits up to `timeoutNanos` (negative: forever; 0: just poll) for events; returns how
    /// many `buffer` now holds.
    @inline(__always)
    func wait(into buffer: EventBuffer, timeoutNanos: Int64) -> Int {
        blockingWaitForWork(fd, buffer.events, buffer.capacity, timeoutNanos: timeoutNanos)
    }

    static func makeEventFD() -> Int32 {
        let fd = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        require(fd >= 0, "eventfd failed: errno \(errno)")
        return fd
    }

    /// Empties an eventfd (non-blocking; EAGAIN means it was already empty).
    static func drainEventFD(_ fd: Int32) {
        var value: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &value) { read(fd, $0.baseAddress, 8) }
    }

    static func signalEventFD(_ fd: Int32) {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(fd, $0.baseAddress, 8) }
    }
}

extension MainLoop.SourceEvents {
    /// What epoll reported for a descriptor (swift-nio's `SelectorEventSet(epollEvent:)` is
    /// the model): IN → readable, OUT → writable, HUP or RDHUP → hangup, ERR → error.
    init(epollEvents bits: UInt32) {
        self = []
        if bits & EPOLLIN.rawValue != 0 { insert(.readable) }
        if bits & EPOLLOUT.rawValue != 0 { insert(.writable) }
        if bits & (EPOLLHUP.rawValue | EPOLLRDHUP.rawValue) != 0 { insert(.hangup) }
        if bits & EPOLLERR.rawValue != 0 { insert(.error) }
    }

    /// The epoll bits to register for this interest: readable → IN, writable → OUT, hangup →
    /// RDHUP (the peer shut its writing side). HUP and ERR are always reported, asked or not.
    var epollInterest: UInt32 {
        (contains(.readable) ? EPOLLIN.rawValue : 0) | (contains(.writable) ? EPOLLOUT.rawValue : 0)
            | (contains(.hangup) ? EPOLLRDHUP.rawValue : 0)
    }
}

/// The loop's idle wait. Stack samples recognise an idle loop by this frame, so the name is
/// part of the contract with the classifier (`StallwatchSymbols.idleWait`, pinned by
/// `IdleWaitSymbolTests`): do not rename, do not inline.
@inline(never)
func blockingWaitForWork(
    _ epfd: Int32, _ events: UnsafeMutablePointer<epoll_event>, _ capacity: Int32,
    timeoutNanos: Int64
)
    -> Int
{
    // EINTR comes from the sampler's signal (and any other): retry with what is left of the
    // timeout, so a sample never turns into a spurious wake-up.
    let deadline = timeoutNanos < 0 ? 0 : sw_monotonic_ns() &+ UInt64(timeoutNanos)
    var remaining = timeoutNanos
    while true {
        let n = sw_epoll_wait_ns(epfd, events, capacity, remaining)
        if n >= 0 { return Int(n) }
        let error = errno
        require(error == EINTR, "epoll_pwait2 failed: errno \(error)")
        if timeoutNanos > 0 {
            let now = sw_monotonic_ns()
            remaining = now >= deadline ? 0 : Int64(deadline - now)
        }
    }
}
