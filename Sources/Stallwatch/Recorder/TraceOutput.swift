import CStallwatchShims
import Dispatch
import Foundation
import Glibc
import StallwatchCore

/// A trace file and its writer thread, what `TraceRecorder` and `HeartbeatRecorder` share: the
/// file is opened (created or truncated) by `init`, the writer runs from `start` to `stop`, and
/// the monitor's stalls reach it through `enqueue`. Any thread.
final class TraceOutput: Sendable {
    /// Where the trace goes.
    let path: String
    let fd: Int32
    /// The monitor's stalls, waiting for the writer.
    let pending = Locked<[PendingStall]>([])
    /// Signalled when a stall is queued (its first record goes to disk now, not at the next
    /// flush) and at `stop()`.
    let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let running = Locked(false)
    private let observer = Locked<(@Sendable (Stall) -> Void)?>(nil)

    /// A stall event from the monitor, waiting for the writer.
    enum PendingStall {
        case began(Stall)
        case ended(Stall)
    }

    /// Opens `path` (created or truncated). Throws if it cannot.
    init(path: String) throws {
        // A preloaded recorder writing the same file (stallwatch record) finishes first.
        PreloadYield.yield()
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SystemError(call: "open(\(path))", errno: errno) }
        var info = stat()
        _ = fstat(fd, &info)
        self.fd = fd
        self.path = path
        identity = (info.st_dev, info.st_ino)
    }

    /// The device and inode of the file `init` opened.
    private let identity: (device: UInt, inode: UInt)

    /// Whether `fd` is still the trace: an app may close every descriptor it did not open and
    /// open files of its own, which then get the trace's number. Checked before every write,
    /// so the recorder never writes into (nor closes) a file the app owns. Any thread.
    var isStillTheTrace: Bool {
        var info = stat()
        return fstat(fd, &info) == 0 && info.st_dev == identity.device && info.st_ino == identity.inode
    }

    deinit { if isStillTheTrace { close(fd) } }

    /// The recorder's `onStallEnded`: called with every finished stall after it is queued.
    var onStallEnded: (@Sendable (Stall) -> Void)? {
        get { observer.withLock { $0 } }
        set { observer.withLock { $0 = newValue } }
    }

    var isRunning: Bool { running.withLock { $0 } }

    /// Starts recording `source` into the file: `begin` (which starts or joins the monitor),
    /// then the writer thread. Does nothing if it runs already; if `begin` throws, nothing runs.
    func start(_ source: any TraceSource, after begin: () throws -> Void) throws {
        guard
            running.withLock({ running in
                defer { running = true }
                return !running
            })
        else { return }
        do {
            try begin()
        } catch {
            running.withLock { $0 = false }
            throw error
        }
        let thread = Thread { [finished] in
            sw_set_thread_name("stallwatchtrace")
            var writer = TraceWriter(recorder: source)
            writer.run()
            finished.signal()
        }
        thread.start()
    }

    /// Stops the writer after `end` (which stops or leaves the monitor, so its last stalls are
    /// queued before the writer's final drain), and waits until the file is complete. Does
    /// nothing if it does not run.
    func stop(after end: () -> Void) {
        guard isRunning else { return }
        end()
        running.withLock { $0 = false }
        wake.signal()
        finished.wait()
    }

    /// Queues a stall of the monitor for the writer, and gives a finished one to `onStallEnded`.
    func enqueue(_ stall: Stall, began: Bool) {
        pending.withLock { $0.append(began ? .began(stall) : .ended(stall)) }
        wake.signal()
        if !began { observer.withLock { $0 }?(stall) }
    }

    /// `STALLWATCH_APP_VERSION`, if set: the app's version when the app does not name it.
    static var environmentAppVersion: String? {
        let version = ProcessInfo.processInfo.environment[StallwatchEnvironment.appVersion]
        return version?.isEmpty == false ? version : nil
    }
}
