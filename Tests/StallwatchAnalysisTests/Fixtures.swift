// Realistic frames and samples (per LINUX-FACTS' /proc table) shared by the classifier tests.

import StallwatchAnalysis
import StallwatchCore

enum Lib {
    static let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
    static let sqlite = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0"
    static let foundation = "/opt/swift/usr/lib/swift/linux/libFoundation.so"
    static let swiftCore = "/opt/swift/usr/lib/swift/linux/libswiftCore.so"
    static let dispatch = "/opt/swift/usr/lib/swift/linux/libdispatch.so"
    static let synchronization = "/opt/swift/usr/lib/swift/linux/libswiftSynchronization.so"
    static let app = "/srv/feed/.build/release/FeedApp"
    static let orm = "/srv/feed/.build/release/libMyORM.so"
}

/// A frame with a plausible address for its module.
func frame(_ symbol: String?, in module: String?, address: UInt64 = 0) -> Frame {
    let base: UInt64 =
        switch module {
        case Lib.libc: 0x7f3a_1c80_0000
        case Lib.sqlite: 0x7f3a_1d20_0000
        case Lib.app: 0x5610_4a40_0000
        default: 0x7f3a_2000_0000
        }
    return Frame(address: base + 0x1_2340 + address, symbol: symbol, module: module)
}

/// The frames under every callout on the main thread: the loop and the process start-up.
let loopFrames: [Frame] = [
    frame("closure #1 () -> () in FeedApp.FeedController.start() -> ()", in: Lib.app),
    frame("Stallwatch.MainLoop.runCallout(_: Stallwatch.Callout) -> ()", in: Lib.app),
    frame("Stallwatch.MainLoop.runOnce() -> ()", in: Lib.app),
    frame("Stallwatch.MainLoop.run() -> ()", in: Lib.app),
    frame("FeedApp_main", in: Lib.app),
    frame("__libc_start_call_main", in: Lib.libc),
    frame("__libc_start_main_impl", in: Lib.libc),
    frame("_start", in: Lib.app),
]

/// A callout whose innermost frames are `top` (innermost first).
func stack(_ top: Frame...) -> [Frame] {
    top + [frame("FeedApp.FeedController.reload() -> ()", in: Lib.app)] + loopFrames
}

let ms: UInt64 = 1_000_000

enum Fixture {
    /// Compute: R, `running`, wchan 0.
    static let compute = Sample(
        time: 20 * ms,
        frames: stack(
            frame("swift_retain", in: Lib.swiftCore),
            frame(
                "FeedApp.ImageResizer.resize(_: FeedApp.Bitmap, to: Swift.Int) -> FeedApp.Bitmap",
                in: Lib.app)),
        state: .running, syscall: nil, wchan: nil, cpuTimeNanos: 18 * ms)

    /// read on a pipe: S, syscall 0, anon_pipe_read.
    static let pipeRead = Sample(
        time: 20 * ms,
        frames: stack(
            frame("read", in: Lib.libc),
            frame("FeedApp.Importer.readChunk(from: Swift.Int32) -> Foundation.Data", in: Lib.app)),
        state: .sleeping, syscall: 0, wchan: "anon_pipe_read")

    /// NSLock: S, futex (202), futex_do_wait.
    static let nsLock = Sample(
        time: 20 * ms,
        frames: stack(
            frame("__futex_abstimed_wait_common", in: Lib.libc),
            frame("__lll_lock_wait", in: Lib.libc),
            frame("pthread_mutex_lock@@GLIBC_2.2.5", in: Lib.libc),
            frame("Foundation.NSLock.lock() -> ()", in: Lib.foundation),
            frame("FeedApp.Cache.value(forKey: Swift.String) -> Any?", in: Lib.app)),
        state: .sleeping, syscall: 202, wchan: "futex_do_wait")

    /// A plain pthread mutex from C code: S, futex, futex_do_wait.
    static let pthreadMutex = Sample(
        time: 20 * ms,
        frames: stack(
            frame("__futex_abstimed_wait_common", in: Lib.libc),
            frame("__lll_lock_wait", in: Lib.libc),
            frame("___pthread_mutex_lock", in: Lib.libc),
            frame("feed_cache_get", in: Lib.app)),
        state: .sleeping, syscall: 202, wchan: "futex_do_wait")

    /// A condition variable: S, futex.
    static let condWait = Sample(
        time: 20 * ms,
        frames: stack(
            frame("__futex_abstimed_wait_common", in: Lib.libc),
            frame("pthread_cond_wait@@GLIBC_2.3.2", in: Lib.libc),
            frame("feed_queue_pop", in: Lib.app)),
        state: .sleeping, syscall: 202, wchan: "futex_do_wait")

    /// Synchronization.Mutex: S, futex PI (202 … 0x86), rt_mutex_schedule.
    static let syncMutex = Sample(
        time: 20 * ms,
        frames: stack(
            frame("syscall", in: Lib.libc),
            frame("Synchronization._MutexHandle._lockSlow(Swift.UInt32) -> ()", in: Lib.synchronization),
            frame("FeedApp.Counter.increment() -> ()", in: Lib.app)),
        state: .sleeping, syscall: 202, wchan: "rt_mutex_schedule")

    /// A slow SQLite query: R, `running`.
    static let sqliteQuery = Sample(
        time: 20 * ms,
        frames: stack(
            frame("sqlite3VdbeExec", in: Lib.sqlite),
            frame("sqlite3Step", in: Lib.sqlite),
            frame("sqlite3_step", in: Lib.sqlite),
            frame("FeedApp.Store.fetchPosts() -> [FeedApp.Post]", in: Lib.app)),
        state: .running)

    /// SQLite's busy handler sleeping: S, clock_nanosleep (230), hrtimer_nanosleep.
    static let sqliteBusy = Sample(
        time: 20 * ms,
        frames: stack(
            frame("clock_nanosleep@GLIBC_2.2.5", in: Lib.libc),
            frame("__nanosleep", in: Lib.libc),
            frame("usleep", in: Lib.libc),
            frame(nil, in: Lib.sqlite),
            frame(nil, in: Lib.sqlite),
            frame("sqlite3_step", in: Lib.sqlite),
            frame("FeedApp.Store.save(_: FeedApp.Post) -> ()", in: Lib.app)),
        state: .sleeping, syscall: 230, wchan: "hrtimer_nanosleep")

    /// fsync: D, 74; the backtrace capture timed out (the signal waits for the syscall).
    static let fsyncTimedOut = Sample(
        time: 20 * ms, frames: [], state: .diskSleep, syscall: 74,
        wchan: "folio_wait_bit_common", captureTimedOut: true)

    /// Idle in a nested run loop's epoll_wait: S, 232, do_epoll_wait.
    static let nestedIdle = Sample(
        time: 20 * ms,
        frames: stack(
            frame("epoll_wait", in: Lib.libc),
            // The real frame (pinned by StallwatchSymbolsTests on a live idle loop).
            frame(StallwatchSymbols.idleWaitFrame, in: Lib.app),
            frame("Stallwatch.MainLoop.runOnce() -> ()", in: Lib.app),
            frame("Stallwatch.MainLoop.run(until: Swift.UInt64) -> ()", in: Lib.app),
            frame("FeedApp.ConfirmSheet.runModal() -> Swift.Bool", in: Lib.app)),
        state: .sleeping, syscall: 232, wchan: "do_epoll_wait")

    /// write() caught on CPU: state R, `running`, but `write` is the innermost frame.
    static let writeRunning = Sample(
        time: 20 * ms,
        frames: stack(
            frame("write", in: Lib.libc),
            frame("FeedApp.Logger.flush() -> ()", in: Lib.app)),
        state: .running)

    /// Sleeping: S, clock_nanosleep (glibc's nanosleep makes that syscall).
    static let sleep = Sample(
        time: 20 * ms,
        frames: stack(
            frame("clock_nanosleep@GLIBC_2.2.5", in: Lib.libc),
            frame("__nanosleep", in: Lib.libc),
            frame("Foundation.Thread.sleep(forTimeInterval: Swift.Double) -> ()", in: Lib.foundation)),
        state: .sleeping, syscall: 230, wchan: "hrtimer_nanosleep")
}
