import CStallwatchPreload
import Glibc
import Stallwatch

// The preload library (`libStallwatchPreload.so`): `stallwatch record` puts it in LD_PRELOAD, or
// the preload shim loads it (Sources/StallwatchPreloadShim/loader.c), so a program that never
// heard of Stallwatch is watched through DispatchQueue.main, its pool and its event loops.

/// Called by the library's constructor on the thread that loads it, or, when the preload shim
/// loaded it, by the shim once its dlopen returned.
@_cdecl("stallwatch_preload_start")
public func stallwatchPreloadStart() {
    HeartbeatRecorder.startPreloaded()
}

/// Called by the preload shim on the event-loop thread whose discovery made it load this library
/// (the thread ran the shim's thread hook, so the monitor's own never runs there).
@_cdecl("stallwatch_preload_prepare_loop_thread")
public func stallwatchPreloadPrepareLoopThread() {
    HeartbeatRecorder.preparePreloadedLoopThread()
}

/// Called at the program's request (its own MainLoop recorder takes over): stops, then gives
/// the sampling signal back so the program's own sampler can install its handler.
@_cdecl("stallwatch_preload_stop")
public func stallwatchPreloadStop() {
    // Once: a later call must not take the signal from the program's own sampler.
    if HeartbeatRecorder.stopPreloaded() { HeartbeatRecorder.releasePreloadedSignal() }
}
