import Foundation
import Glibc

/// A stand-in for a swift-nio `EventLoop`: one thread, a set of watched descriptors, and
/// `execute` to run a closure there (swift-nio is not fetchable here; its adoption is the same
/// three lines, see docs/unmodified-programs.md). The thread parks in `poll` when there is nothing to do.
final class EventLoop: @unchecked Sendable {
    let name: String
    /// The self-pipe `execute` writes to, to wake the loop.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let tasks = NSLock()
    private var queue: [@Sendable () -> Void] = []
    /// Loop thread only: what to call when a descriptor becomes readable.
    private var handlers: [Int32: () -> Void] = [:]
    private var thread: Thread?
    /// The loop thread's /proc directory, once it runs.
    private(set) var threadPath = ""

    init(name: String) {
        self.name = name
        var fds: [Int32] = [0, 0]
        pipe(&fds)
        wakeRead = fds[0]
        wakeWrite = fds[1]
        _ = fcntl(wakeRead, F_SETFL, O_NONBLOCK)
    }

    /// Runs `task` on the loop thread. Any thread.
    func execute(_ task: @escaping @Sendable () -> Void) {
        tasks.lock()
        let wasEmpty = queue.isEmpty
        queue.append(task)
        tasks.unlock()
        if wasEmpty { _ = write(wakeWrite, "x", 1) }
    }

    /// Loop thread: calls `handler` whenever `fd` is readable.
    func register(_ fd: Int32, _ handler: @escaping () -> Void) { handlers[fd] = handler }

    /// Loop thread: stops watching `fd` and closes it.
    func unregister(_ fd: Int32) {
        handlers[fd] = nil
        close(fd)
    }

    func start() {
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            threadPath =
                "/proc/" + ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? "")
            ready.signal()
            run()
        }
        thread.name = name
        thread.start()
        self.thread = thread
        ready.wait()
    }

    private func run() {
        while true {
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            fds += handlers.keys.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            if poll(&fds, nfds_t(fds.count), -1) < 0 { continue }  // EINTR
            for entry in fds where entry.revents != 0 {
                if entry.fd == wakeRead {
                    var drain = [UInt8](repeating: 0, count: 64)
                    while read(wakeRead, &drain, drain.count) > 0 {}
                    tasks.lock()
                    let batch = queue
                    queue.removeAll()
                    tasks.unlock()
                    for task in batch { task() }
                } else {
                    handlers[entry.fd]?()
                }
            }
        }
    }
}
