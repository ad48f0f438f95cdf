// What the constructor (preload.c) uses from swift_runtime_signals.c (not part of the module's API).
#pragma once

#include <stdbool.h>

/// Whether the program needs the Swift runtime itself: its executable links libswiftCore.so,
/// directly or through the libraries it links (a Swift program), rather than getting it only
/// because this library needs it. Reads the loaded objects' dynamic sections; for the constructor.
__attribute__((visibility("hidden"))) bool swp_program_needs_swift_runtime(void);

/// Puts every signal whose handler is in libswiftCore.so (the runtime's crash handler) back to
/// SIG_DFL, which is what the runtime found there; returns how many. For the constructor.
__attribute__((visibility("hidden"))) int swp_restore_signals_taken_by_swift_runtime(void);
