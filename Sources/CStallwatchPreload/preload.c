#include "CStallwatchPreload.h"

// Runs when the dynamic loader maps the library (LD_PRELOAD: before main, after the
// constructors of the libraries it depends on, libdispatch and the Swift runtime included).
__attribute__((constructor)) static void stallwatch_preload_constructor(void) { stallwatch_preload_start(); }

__attribute__((visibility("default"))) void stallwatch_preload_yield(void) { stallwatch_preload_stop(); }
