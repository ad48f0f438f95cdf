// What the capture paths share of asyncchain.c (not part of the module's API).
#pragma once

#include <stdint.h>

#include "CStallwatchAsyncChain.h"

// The index in `frames` (an interrupted PC, then return addresses) of the innermost async
// frame: the outermost frame the Concurrency runtime called. -1 if none (or the runtime's
// code is unknown). Async-signal-safe.
__attribute__((visibility("hidden"))) int sw_async_anchor(const uintptr_t *frames, int count);

// The chain of a stack captured in a handler: finds the anchor in `frames`, its frame record by
// walking the records up from the interrupted `rbp`, then its context at fp - 8. Sets
// out->caller to the anchor's return address. Async-signal-safe.
__attribute__((visibility("hidden"))) void sw_async_from_frame_pointer(const uintptr_t *frames, int count,
                                                                       uint64_t rbp, sw_async_chain *out);

// The chain from the anchor's frame record at `fp` (its context at fp - 8). Async-signal-safe.
__attribute__((visibility("hidden"))) void sw_async_from_record(uint64_t fp, sw_async_chain *out);
