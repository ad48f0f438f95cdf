// What sampler.c shares with selfsample.c (not part of the module's API).
#pragma once

#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <ucontext.h>

// The interrupted instruction, from the context the kernel saved for a handler (x86_64).
static inline uintptr_t sw_interrupted_pc(const ucontext_t *uc) {
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

// clock_gettime is async-signal-safe (POSIX list) and goes through the vDSO: ~20 ns.
static inline int64_t sw_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Room for the frames of the signal machinery that unw_backtrace reports before the interrupted
// frame: [return into the handler, __restore_rt, RIP, callers...]. Normally 2; 8 leaves slack.
#define SW_RAW_EXTRA 8

// libunwind's unw_backtrace, loaded by sw_sampler_install (NULL before). Async-signal-safe once
// the thread was prepared (see sampler.c).
__attribute__((visibility("hidden"))) int sw_unwind_here(void **buffer, int size);

// Whether sw_sampler_install succeeded (libunwind is loaded).
__attribute__((visibility("hidden"))) int sw_unwinder_loaded(void);

// Copies the interrupted stack out of a raw unw_backtrace result taken in a handler: frames[0]
// is `rip`, then the callers after the first raw entry equal to `rip` (the handler's frames and
// the trampoline dropped; RIP alone if it is not among the first SW_RAW_EXTRA). Returns the
// count; *truncated is 1 if the raw stack did not fit.
__attribute__((visibility("hidden"))) int sw_trim_handler_frames(
    void *const *raw, int raw_count, int raw_capacity, uintptr_t rip, uintptr_t *frames, int capacity,
    int *handler_frames, int *truncated);

// Unblocks `signo` for the calling thread. Returns SW_SAMPLER_OK or SW_SAMPLER_ESYS.
__attribute__((visibility("hidden"))) int sw_unblock_signal(int signo);

// Whether `signo` has no handler (nor SIG_IGN): SW_SAMPLER_OK, else `in_use`, or SW_SAMPLER_ESYS.
// (Query and install are two calls; a third party installing in between is not detectable.)
__attribute__((visibility("hidden"))) int sw_signal_free(int signo, int in_use);

// Installs `handler` on `signo` as every unwinding handler here wants it: SA_SIGINFO |
// SA_RESTART (read()/futex waits restart instead of failing with EINTR; nanosleep and epoll_wait
// return EINTR whatever we do), no SA_ONSTACK (the handler unwinds through the normal stack), and
// every other signal blocked while it runs, so no other handler nests inside libunwind.
// Returns SW_SAMPLER_OK or SW_SAMPLER_ESYS.
__attribute__((visibility("hidden"))) int sw_install_unwinding_handler(
    int signo, void (*handler)(int, siginfo_t *, void *));
