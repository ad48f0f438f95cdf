// CStallwatchSampler: capture another thread's backtrace from a real-time signal handler.
//
// How it works: the watchdog calls sw_sampler_capture(tid); that queues a real-time signal
// to the target thread with rt_tgsigqueueinfo, carrying a request id. The handler (which
// runs on the target thread) claims the shared preallocated slot for that request id only,
// unwinds with libunwind's unw_backtrace, and wakes the watchdog with a futex.
//
// libunwind is loaded with dlopen(RTLD_LOCAL) and is never linked, so the process's C++/Swift
// unwinder (_Unwind_* in libgcc_s) is not replaced. See docs/sampler-notes.md.
//
// Order of calls:
//   1. sw_sampler_install(signo)          once, any thread, before anything else
//   2. sw_sampler_prepare_thread()        on every thread that will be sampled (the loop thread)
//   3. sw_sampler_capture(tid, ...)       from the watchdog thread, as often as needed
//
// All functions are safe to call from any thread unless stated; none may be called from a
// signal handler. Error codes are negative SW_SAMPLER_E* values.
#pragma once

#include <stdint.h>

#include "CStallwatchAsyncChain.h"
#include "CStallwatchPerf.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Largest number of frames one capture returns. Larger capacities are clipped to this.
#define SW_SAMPLER_MAX_FRAMES 128

/// Error codes. Functions return 0 (or a non-negative value) on success, one of these on failure.
/// (Macros rather than an enum so that Swift imports them as Int32, the functions' return type.)
#define SW_SAMPLER_OK 0
#define SW_SAMPLER_EINVAL (-1)        ///< bad argument (signal not in SIGRTMIN...SIGRTMAX, null pointer)
#define SW_SAMPLER_EINUSE (-2)        ///< the signal already has a handler (or SIG_IGN) installed by someone else
#define SW_SAMPLER_EALREADY (-3)      ///< the sampler is already installed on a different signal
#define SW_SAMPLER_ENOUNWIND (-4)     ///< libunwind.so.8 could not be loaded or lacks unw_backtrace
#define SW_SAMPLER_ENOTINSTALLED (-5) ///< sw_sampler_install has not succeeded yet
#define SW_SAMPLER_ESEND (-6)         ///< rt_tgsigqueueinfo failed (see sys_errno; EAGAIN = signal queue full)
#define SW_SAMPLER_ENOTHREAD (-7)     ///< no such thread in this process (it exited)
#define SW_SAMPLER_ETIMEDOUT (-8)     ///< the handler did not finish in time (thread in state D, signal blocked, stopped)
#define SW_SAMPLER_EBUSY (-9)         ///< a late handler from an earlier timed-out capture is still writing; retry later
#define SW_SAMPLER_ESYS (-10)         ///< a system call (sigaction, pthread_sigmask) failed

/// Outcome and timings of one capture. Times are CLOCK_MONOTONIC nanoseconds, 0 when the
/// step was not reached (e.g. handler_ns and ready_ns after a timeout).
typedef struct sw_capture_result {
    int32_t frame_count;   ///< frames written to `frames` (0 on error)
    int32_t timed_out;     ///< 1 if no handler completed within the timeout
    int32_t late_handler;  ///< 1 if, at the timeout, a handler had started but not finished
    int32_t truncated;     ///< 1 if the stack was deeper than the capacity (outermost frames dropped)
    int32_t sys_errno;     ///< errno of the failed system call for SW_SAMPLER_ESEND / ESYS, else 0
    int32_t handler_frames;///< frames of the signal machinery that were skipped (diagnostic; normally 2)
    uint64_t request_id;   ///< id carried in si_value; unique per capture
    int64_t sent_ns;       ///< just before the signal was queued
    int64_t handler_ns;    ///< first instruction of the handler on the target thread
    int64_t ready_ns;      ///< handler finished unwinding (stack ready in the slot)
    int64_t woken_ns;      ///< the capturing thread saw the result (after its futex wake-up)
    /// The awaiting callers of the async function the thread was in, read by the handler
    /// (CStallwatchAsyncChain.h); chain.caller is 0 when the stack holds no async frame.
    sw_async_chain chain;
} sw_capture_result;

/// Counters since install, for the sampler's own tests (Tests/CStallwatchSamplerTests) and
/// diagnostics. Read without locking; values may be slightly stale.
typedef struct sw_sampler_stats {
    uint64_t captures;        ///< sw_sampler_capture calls that sent a signal
    uint64_t completed;       ///< handlers that filled the slot for a live request
    uint64_t timeouts;        ///< captures that timed out
    uint64_t stale_signals;   ///< handlers that ran for a request no longer waited for (ignored)
    uint64_t late_completions;///< handlers that claimed the slot but finished after their capture timed out
    uint64_t foreign_signals; ///< handler invocations not sent by this sampler (wrong si_code/id; ignored)
} sw_sampler_stats;

/// Copies the counters into *out. Any thread.
void sw_sampler_get_stats(sw_sampler_stats *out);

/// Loads libunwind (dlopen RTLD_LOCAL|RTLD_NOW|RTLD_NODELETE), sets its cache policy, checks that
/// `signo` is a real-time signal with no handler (sigaction query; refuses SIG_IGN or any handler),
/// installs the sampling handler and warms libunwind up on the calling thread.
/// Returns 0, or SW_SAMPLER_EINVAL / EINUSE / EALREADY / ENOUNWIND / ESYS.
/// Calling it again with the same signal returns 0. Any thread; not from a signal handler.
int sw_sampler_install(int signo);

/// The signal the sampler uses unless told otherwise: SIGRTMIN+4 (glibc's SIGRTMIN is a
/// function, so Swift cannot use the macro). Any thread.
int sw_sampler_default_signal(void);

/// The signal the sampler is installed on, or 0 if not installed (the sampler's tests). Any thread.
int sw_sampler_installed_signal(void);

/// Must be called ON the thread to be sampled (the loop thread), after sw_sampler_install.
/// Unblocks the sampling signal for the calling thread (threads made by libdispatch and Swift
/// Testing block real-time signals, and their children inherit that), then primes libunwind for
/// this thread by capturing itself once through the real handler (allocates libunwind's
/// thread-local trace cache, resolves lazy PLT entries, fills the unwind caches for the signal
/// frames), so that later captures do no allocation. May take a few hundred microseconds.
/// Returns the kernel thread id (gettid) to pass to sw_sampler_capture, or a negative error.
int sw_sampler_prepare_thread(void);

/// Captures the backtrace of thread `tid` (a kernel tid in this process, prepared with
/// sw_sampler_prepare_thread). Writes up to `capacity` (clipped to SW_SAMPLER_MAX_FRAMES)
/// return addresses to `frames`:
///   frames[0]  = the interrupted instruction (ucontext RIP), i.e. inside the function that was running;
///   frames[1…] = return addresses of its callers, innermost first (subtract 1 before symbol lookup).
/// The handler's own frames and the signal trampoline are removed.
/// Waits at most `timeout_ns` for the handler; on timeout returns SW_SAMPLER_ETIMEDOUT with
/// out->timed_out = 1 and the request is revoked, so a handler that runs later cannot touch the
/// result of any later capture. `out` may be NULL. Returns the frame count (>= 1) or a negative error.
/// One capture at a time: concurrent callers are serialised by a mutex (meant for the watchdog thread).
/// Must not be called with `tid` = the calling thread's own tid unless its signal is unblocked.
int sw_sampler_capture(int tid, uintptr_t *frames, int capacity, int64_t timeout_ns,
                       sw_capture_result *out);

/// Human-readable text for a SW_SAMPLER_E* code (static string). Any thread.
const char *sw_sampler_strerror(int code);

/// Path of the loaded object that defines _Unwind_RaiseException in the global scope
/// (dladdr(dlsym(RTLD_DEFAULT, "_Unwind_RaiseException"))): must be libgcc_s, never libunwind.
/// NULL if no loaded object defines it. The string belongs to the dynamic loader. Any thread.
const char *sw_sampler_unwinder_owner(void);

/// Path of the object that provides the unw_backtrace the sampler uses (libunwind.so.8),
/// or NULL before sw_sampler_install succeeded (the sampler's tests). Any thread.
const char *sw_sampler_libunwind_path(void);

#ifdef __cplusplus
}
#endif

// The loop thread's self-sampling ticks (after everything above, which it uses).
#include "CStallwatchSelfSample.h"
// The addresses the loop thread page-faults on, for the wait facts.
#include "CStallwatchFaults.h"
// The DWARF unwind of a thread parked in a system call (the stack scan), without a signal.
#include "CStallwatchScanUnwind.h"
