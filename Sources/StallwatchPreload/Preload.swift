import CStallwatchPreload
import Glibc
import Stallwatch

// The preload library (`libStallwatchPreload.so`): `stallwatch record` puts it in LD_PRELOAD
// so a program that never heard of Stallwatch is watched through DispatchQueue.main.

/// Called by the library's constructor on the thread that loads it.
@_cdecl("stallwatch_preload_start")
func stallwatchPreloadStart() {
    HeartbeatRecorder.startPreloaded()
}

/// Called at the program's request (its own MainLoop recorder takes over): stops, then gives
/// the sampling signal back so the program's own sampler can install its handler.
@_cdecl("stallwatch_preload_stop")
func stallwatchPreloadStop() {
    // Once: a later call must not take the signal from the program's own sampler.
    if HeartbeatRecorder.stopPreloaded() { HeartbeatRecorder.releasePreloadedSignal() }
}
