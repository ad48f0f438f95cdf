// The preload library's C side: the load-time constructor and the one symbol a program's own
// copy of Stallwatch looks up. See docs/watchdog.md, "Loops Stallwatch does not own".
#pragma once

/// Defined in Swift (StallwatchPreload): starts the heartbeat monitor and recorder on
/// DispatchQueue.main when STALLWATCH_TRACE asks for a trace.
void stallwatch_preload_start(void);

/// Defined in Swift (StallwatchPreload): stops them and frees the sampling signal.
void stallwatch_preload_stop(void);

/// Defined in Swift (StallwatchPreload): prepares the calling thread, an event loop's found by its
/// waits, for sampling. The preload shim (Sources/StallwatchPreloadShim/loader.c) calls it, found
/// with dlsym, on the loop thread whose discovery made it load this library: that thread already
/// ran the shim's thread hook, so the monitor's own hook never runs there.
void stallwatch_preload_prepare_loop_thread(void);

/// Exported for a program that links Stallwatch and starts its own monitor or recorder (which
/// takes the trace over): it calls this, found with dlsym, so the preloaded one stops
/// first. The name is fixed: `PreloadYield.symbol` in the Stallwatch module.
void stallwatch_preload_yield(void);
