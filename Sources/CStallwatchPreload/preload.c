#include "CStallwatchPreload.h"
#include "internal.h"

#include <stddef.h>

// Defined by the preload shim (Sources/StallwatchPreloadShim/loader.c), when that is what loaded
// this library: the shim then starts the monitor itself, after dlopen returned.
extern const int stallwatch_preload_shim __attribute__((weak));

// Runs when the dynamic loader maps the library (LD_PRELOAD, or the preload shim's dlopen: after
// the constructors of the libraries it depends on, libdispatch and the Swift runtime included).
// A program that is not a Swift program first gets back the crash signals the Swift runtime
// took when it was loaded for this library: the preload never changes how a program dies.

__attribute__((constructor)) static void stallwatch_preload_constructor(void) {
    if (!swp_program_needs_swift_runtime()) swp_restore_signals_taken_by_swift_runtime();
    if (&stallwatch_preload_shim == NULL) stallwatch_preload_start();
}

__attribute__((visibility("default"))) void stallwatch_preload_yield(void) { stallwatch_preload_stop(); }
