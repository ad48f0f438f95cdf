// C helpers for the tests (not part of the package's products).
//
// 1. Which sanitizer this code was compiled with: SwiftPM passes -fsanitize=… to C targets too,
//    and clang's __has_feature answers at compile time (Swift has no #if for sanitizers); and
//    how many reports it has printed in this process.
// 2. Threads and probes for CStallwatchSamplerTests, which drive the sampler's C API directly:
//    a spinning thread at known functions, a thread blocked in read() with the signal blocked,
//    a holder of the dynamic loader's lock, and senders of foreign signals.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// 1 if this target was compiled with -fsanitize=address, else 0.
int swt_built_with_address_sanitizer(void);
/// 1 if this target was compiled with -fsanitize=thread, else 0.
int swt_built_with_thread_sanitizer(void);
/// How many reports the sanitizer this process runs under has printed so far (ThreadSanitizer,
/// AddressSanitizer; always 0 in a build without one). The tests' retry trait reads it: a test
/// is never run again after a report.
int swt_sanitizer_reports(void);

/// What a test thread does.
typedef enum swt_target_kind {
    /// sw_sampler_prepare_thread, then spins in swt_spin_inner (called from swt_spin_outer).
    SWT_TARGET_SPIN_PREPARED = 0,
    /// Blocks the sampling signal, then waits in read() on a pipe until stopped; unblocks the
    /// signal just before it exits, so queued (stale) signals are delivered then.
    SWT_TARGET_BLOCKED_IN_READ = 1,
    /// Like SPIN_PREPARED but spins in swt_spin_fresh_inner/outer, which no other test runs: the
    /// first unwind through them must look their unwind info up (dl_iterate_phdr).
    SWT_TARGET_SPIN_FRESH = 2,
    /// Spins without calling sw_sampler_prepare_thread, with the sampling signal blocked (as on
    /// threads made by libdispatch or Swift Testing); it prepares itself when asked to.
    SWT_TARGET_SPIN_UNPREPARED = 3,
    /// sw_sampler_prepare_thread, then waits in read() on a pipe until stopped, counting reads
    /// that fail with EINTR (the handler is installed with SA_RESTART: there should be none).
    SWT_TARGET_PREPARED_IN_READ = 4,
} swt_target_kind;

typedef struct swt_target swt_target;

/// Starts a thread of `kind` for the sampler installed on `signo` and waits until it runs its
/// loop. NULL if the thread could not be created or preparing failed (see swt_target_prepare_rc).
swt_target *swt_target_start(swt_target_kind kind, int signo);
/// The thread's kernel tid (what sw_sampler_capture takes).
int swt_target_tid(const swt_target *t);
/// sw_sampler_prepare_thread's return on that thread (its tid, or a negative error; 0 if not called).
int swt_target_prepare_rc(const swt_target *t);
/// For SPIN_UNPREPARED: makes the thread call sw_sampler_prepare_thread and waits for it.
/// Returns its result.
int swt_target_prepare_now(swt_target *t);
/// Stops the thread (for BLOCKED_IN_READ: wakes its read, then it unblocks the signal and
/// runs any queued handler before exiting) and joins it. Idempotent; any thread.
void swt_target_stop(swt_target *t);
/// Stops the thread if it still runs, then frees `t`.
void swt_target_free(swt_target *t);
/// After stop, for the spinning kinds: 1 if errno, set before spinning, was unchanged when the
/// thread stopped spinning (the handler saves and restores it), else 0.
int swt_target_errno_intact(const swt_target *t);
/// After stop, for PREPARED_IN_READ: how many read() calls failed with EINTR.
int swt_target_read_interrupted(const swt_target *t);

/// Entry points of the spinning code, for checking captured frames against.
uintptr_t swt_address_of_spin_inner(void);
uintptr_t swt_address_of_spin_outer(void);
uintptr_t swt_address_of_spin_fresh_inner(void);
uintptr_t swt_address_of_spin_fresh_outer(void);

/// Calls down `depth` frames and back (leaving their frame records on the stack below the
/// caller), then reads one byte from `fd` into a buffer of `bytes` allocated on the stack
/// (alloca): a frame whose SP at the call is further below its frame pointer than its prologue
/// says, over stale frame records. Returns read's result.
long swt_read_below_stack_allocation(int fd, unsigned long bytes, int depth);

/// Holds the dynamic loader's lock (glibc's dl_load_write_lock, taken by dl_iterate_phdr for
/// the whole iteration) on a new thread until swt_loader_lock_release. Returns once it is held.
/// While held, a sampler handler that must look up unwind info for a new address waits.
typedef struct swt_loader_lock swt_loader_lock;
swt_loader_lock *swt_loader_lock_hold(void);
void swt_loader_lock_release(swt_loader_lock *lock);

/// tgkill(getpid(), tid, signo): a plain signal (si_code SI_TKILL), as a foreign sender would.
int swt_send_tkill(int tid, int signo);
/// rt_tgsigqueueinfo with si_code SI_QUEUE and an arbitrary si_value (e.g. an id the sampler
/// never issued). 0 or -errno.
int swt_send_queued(int tid, int signo, uint64_t value);

/// Name of the object containing `address` (dladdr), or NULL.
const char *swt_object_of(uintptr_t address);

/// SIGRTMIN and SIGRTMAX (functions in glibc, so Swift cannot use the macros).
int swt_sigrtmin(void);
int swt_sigrtmax(void);
/// The calling thread's kernel tid.
int swt_gettid(void);
/// Sets `signo`'s disposition to SIG_IGN (ignore = 1) or SIG_DFL (0). 0 or -1.
int swt_ignore_signal(int signo, int ignore);

#ifdef __cplusplus
}
#endif
