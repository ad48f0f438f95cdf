#if os(Linux)
    import CStallwatchShims
    import CStallwatchShims
    import Glibc

    /// A system call failed: which one and errno. Thrown by the loop's registration functions.
    public struct SystemError: Error, CustomStringConvertible, Sendable {
        /// The failing call, e.g. `epoll_ctl(ADD, fd 7)`.
        public var call: String
        /// The errno it set.
        public var errno: Int32

        public var description: String {
            "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
        }
    }

    /// The loop's Linux backend: one epoll instance (a mode's interest set) plus eventfd helpers.
    /// Internal, loop-thread only, so the platform calls stay in this file.
    struct Epoll {
        let fd: Int32

        init() throws {
            let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
            guard fd >= 0 else { throw SystemError(call: "epoll_create1", errno: Glibc.errno) }
            self.fd = fd
        }

        func close() { _ = Glibc.close(fd) }

        /// Adds, changes or removes `target` with `events` (EPOLLIN/EPOLLOUT bits); `tag` comes back
        /// with each event.
        func control(_ op: Int32, _ target: Int32, events: UInt32, tag: UInt64) throws {
            var event = epoll_event()
            event.events = events
            event.data.u64 = tag
            if epoll_ctl(fd, op, target, &event) != 0 {
                let name = op == EPOLL_CTL_ADD ? "ADD" : op == EPOLL_CTL_MOD ? "MOD" : "DEL"
                throw SystemError(call: "epoll_ctl(\(name), fd \(target))", errno: Glibc.errno)
            }
        }

        static func makeEventFD() -> Int32 {
            let fd = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
            precondition(fd >= 0, "eventfd failed: errno \(errno)")
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

    /// The loop's idle wait. Stack samples recognise an idle loop by this frame, so the name is
    /// part of the contract with the classifier: do not rename, do not inline.
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
            precondition(error == EINTR, "epoll_pwait2 failed: errno \(error)")
            if timeoutNanos > 0 {
                let now = sw_monotonic_ns()
                remaining = now >= deadline ? 0 : Int64(deadline - now)
            }
        }
    }
#endif
