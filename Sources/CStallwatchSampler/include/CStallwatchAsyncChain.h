// CStallwatchAsyncChain: the awaiting callers of the async function a sampled thread is in.
//
// Why: a Swift async function calls its callee as a tail call and keeps what it needs in its
// async context, so when a job blocks, the thread's stack holds only the innermost async
// function (`(1) suspend resume partial function for X`), above the runtime's job plumbing
// (`swift_job_run`, `_dispatch_worker_thread`…). Its callers live in the async context chain:
// each context starts with its Parent context and the ResumeParent function that continues the
// caller (the runtime's include/swift/ABI/Task.h, `AsyncContext`). Swift's own Linux backtracer
// (stdlib RuntimeModule/FramePointerUnwinder.swift) follows the same chain.
//
// How the innermost async frame is found without symbols (a signal handler has none): it is
// the outermost frame the Concurrency runtime called (its return address lies in
// libswift_Concurrency's code, its own does not). On x86_64 Linux its frame record's slot
// below the saved RBP (fp - 8) holds its async context (the swiftasync frame layout). From
// there: resume functions, innermost caller first, until the task's root context (whose
// resume function is the runtime's task completion, not listed) or a context that cannot be
// read. The symbolicator checks the result off the hot path: an innermost frame that does
// not name an async function drops the chain.
//
// Every read is a bounded process_vm_readv of this process's memory: a bad pointer (a freed
// or reused context) gives an error, never a fault. Async-signal-safe once prepared.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The most awaiting callers one chain holds.
#define SW_ASYNC_MAX_CHAIN 48

/// How a chain ended (`sw_async_chain.end`).
#define SW_ASYNC_END_NONE 0        ///< no async frame found (or the runtime's code is unknown)
#define SW_ASYNC_END_ROOT 1        ///< reached the task's root context
#define SW_ASYNC_END_UNREADABLE 2  ///< a context or the innermost frame's record could not be read
#define SW_ASYNC_END_TRUNCATED 3   ///< longer than SW_ASYNC_MAX_CHAIN

/// The async context chain of one sample.
typedef struct sw_async_chain {
    int32_t count;    ///< resume functions in `resume`
    int32_t end;      ///< SW_ASYNC_END_*
    /// The return address into the runtime right after the innermost async frame in the
    /// sample's frames (the chain replaces it and every frame after it); 0: no chain.
    uint64_t caller;
    uint64_t context; ///< the innermost async frame's context
    /// Resume functions (exact entry points, not return addresses), innermost caller first.
    uintptr_t resume[SW_ASYNC_MAX_CHAIN];
} sw_async_chain;

/// Finds the Concurrency runtime's code (the object defining `swift_job_run`). Called by
/// sw_sampler_install, sw_self_install and the stack scan; any thread but a signal handler.
/// Returns 1 if the runtime was found.
int sw_async_prepare(void);

/// Whether `address` lies in the Concurrency runtime's code (after sw_async_prepare). Any thread.
int sw_async_in_runtime(uint64_t address);

/// Follows the context chain from `context` (one async frame's context) into `out`. Any thread,
/// async-signal-safe. The benchmark and tests call it on their own contexts.
void sw_async_follow(uint64_t context, sw_async_chain *out);

#ifdef __cplusplus
}
#endif
