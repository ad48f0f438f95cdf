/// The names of Stallwatch's own code that this module recognises in stacks: string contracts
/// between the `Stallwatch` module, whose functions bear the names, and the classifier and
/// `Frame`, which match them. Each is written once, here; `StallwatchSymbolsTests`
/// (Tests/StallwatchTests) captures real stacks and fails if a name drifts.
package enum StallwatchSymbols {
    /// The run loop's idle wait (`blockingWaitForWork` in `Sources/Stallwatch/Loop/Epoll.swift`),
    /// with its module: an executor's own function of that name (swift-nio's
    /// `SelectableEventLoop._blockingWaitForWork`, inside whose callback every handler runs) is
    /// not it. A frame whose symbol contains it, among the innermost few, means the loop is
    /// parked idle: the built-in rule `idle-wait`.
    package static let idleWait = "Stallwatch.blockingWaitForWork"

    /// swift-nio's event-loop wait. Its handlers run inside it, so it is idle only while the
    /// thread is in the epoll wait itself: the built-in rule `nio-idle-wait`.
    package static let nioIdleWait = "NIOPosix.SelectableEventLoop._blockingWaitForWork"

    /// The idle wait's frame exactly as the symbolicator names it (demangled and simplified), for
    /// test fixtures that imitate an idle loop's stack.
    package static let idleWaitFrame =
        "Stallwatch.blockingWaitForWork(_: Swift.Int32, _: Swift.UnsafeMutablePointer<__C.epoll_event>, _: Swift.Int32, timeoutNanos: Swift.Int64) -> Swift.Int"

    /// The file a heartbeat stall's callout names (`HeartbeatMonitor`): the monitor's heartbeat,
    /// not the app's code, so reports name such a stall's site from its stack.
    package static let heartbeatFile = "heartbeat"

    /// The mode a heartbeat stall's callout names (`HeartbeatMonitor.calloutMode`); an event
    /// loop found by its waits names its wait instead (`epoll`, `poll`, `select`).
    package static let heartbeatMode = "heartbeat"

    /// The mode of a stall of one `DispatchQueue.main` item timed from its start to its end (the
    /// preload library's dispatch trampolines), and the `how` of its `watched` record.
    package static let queueItemsMode = "items"

    /// The mode of a stall of one Swift job on a pool thread, timed from its start to its end (a
    /// "long job"), and the `how` of its `watched` record.
    package static let poolJobsMode = "jobs"

    /// The module apps import: the loop, the monitor and the recorder.
    package static let runtimeModule = "Stallwatch"

    /// This module, compiled into apps with the runtime.
    package static let coreModule = "StallwatchCore"

    /// How the demangler names the closure a loop function wraps a callout's work in (the
    /// `() -> Void` body of `MainLoop.callout`), e.g. around a source's handler.
    package static let calloutClosurePrefix = "closure #1 () -> () in "

    /// Symbols starting with one of these are Stallwatch's own frames, not the app's
    /// (`Frame.isSystem`), matched against the function a symbol is part of (`Frame.owner(of:)`:
    /// closures, witnesses and statics by their function).
    package static let infrastructurePrefixes =
        ["\(runtimeModule).", "\(coreModule).", poolHook] + executorPrefixes

    /// The pool monitor's enqueue hook (`CStallwatchShims/pool_hook.c`), in the stack of every
    /// thread that enqueues a task while the pool is watched: a C function, compiled into the
    /// app or the preload library.
    package static let poolHook = "sw_pool_hook"

    /// The toolchain's Swift modules: their generics specialised into an app are not the app's
    /// code (`Frame.isToolchainLibrary`).
    package static let toolchainSwiftModules: Set<String> = [
        "Swift", "_Concurrency", "_StringProcessing", "RegexBuilder", "Synchronization", "Observation",
        "Distributed", "Foundation", "FoundationEssentials", "FoundationInternationalization", "Dispatch",
    ]

    /// The preload library's file name: every frame in it is Stallwatch's (`stallwatch record`
    /// puts it into a program nobody changed).
    package static let preloadLibrary = "libStallwatchPreload.so"

    /// The preload shim's file name: C linked against the C library only, which `record` preloads
    /// instead when it is next to the preload library, and which loads that library (from its own
    /// directory, by `preloadLibrary`) only into a process that needs it
    /// (`Sources/StallwatchPreloadShim/loader.c`, built by `scripts/build-preload-shim.sh`). Its
    /// frames (the interposed waits) are Stallwatch's too.
    package static let preloadShim = "libStallwatchPreloadShim.so"

    /// Executors' own dispatch code, compiled into apps like Stallwatch is: swift-nio's event
    /// loops, channel pipeline and HTTP codec (its C parser too). Their frames are
    /// infrastructure, never the app's: a stall's signature and site name the handler they
    /// called.
    package static let executorPrefixes = [
        "NIOCore.", "NIOPosix.", "NIOHTTP1.", "NIOEmbedded.", "NIOConcurrencyHelpers.", "c_nio_",
    ]
}
