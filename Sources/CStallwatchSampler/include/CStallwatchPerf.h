// CStallwatchPerf: the loop thread's user stack from perf_event_open, for the samples the
// signal cannot take (a thread inside a long read()/write() runs no handler until it returns).
//
// How it works: a task-clock event on the loop thread (sampling every `period_ns` of the thread's
// CPU time, stamped with CLOCK_MONOTONIC) writes, per sample, the user registers and a copy of
// the top of the user stack into a ring buffer the kernel fills. The watchdog enables the event
// only while a stall is in progress, reads the newest sample from the ring and unwinds the copied
// stack on its own thread: with libunwind's generic library (libunwind-x86_64.so.8, loaded with
// dlopen RTLD_LOCAL) over an address space whose memory reads come from the copy for stack
// addresses and from the process's own loaded images otherwise (.eh_frame), else by the
// frame-pointer chain. The loop thread never runs any of this code.
//
// Privilege: with exclude_kernel=0 (root, CAP_PERFMON, perf_event_paranoid <= 1) samples taken
// while the thread is in the kernel arrive, with the user registers of its syscall entry; with
// exclude_kernel=1 (unprivileged at paranoid 2) the kernel drops them, so only samples taken in
// user mode arrive. sw_perf_open tries the first and falls back to the second. See
// docs/watchdog.md, "Stacks from perf".
//
// One handle per sampled thread; every call on a handle from one thread at a time (the watchdog).
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// An open perf event on one thread, with its ring buffer and unwinder.
typedef struct sw_perf sw_perf;

/// Error codes (negative); see sys_errno in sw_perf_open_info for the system's reason.
#define SW_PERF_OK 0
#define SW_PERF_EINVAL (-1)     ///< bad argument
#define SW_PERF_EOPEN (-2)      ///< perf_event_open failed (EACCES: paranoid 3 or no privilege; ENOENT/ENOSYS: no perf)
#define SW_PERF_EMMAP (-3)      ///< the ring buffer could not be mapped (perf_event_mlock_kb, RLIMIT_MEMLOCK)
#define SW_PERF_ESYS (-4)       ///< an ioctl on the event failed
#define SW_PERF_ENOMEM (-5)     ///< out of memory

/// sw_perf_open flags.
#define SW_PERF_USER_ONLY 1     ///< open with exclude_kernel=1 even where kernel samples are allowed (measurement)

/// Unwinders for sw_perf_latest.
#define SW_PERF_UNWIND_DWARF 1        ///< libunwind over the stack copy (falls back to frame pointers if unavailable)
#define SW_PERF_UNWIND_FRAMEPOINTER 2 ///< the saved-RBP chain inside the stack copy only

/// What sw_perf_open got.
typedef struct sw_perf_open_info {
    int32_t sys_errno;       ///< errno of the failed call (SW_PERF_EOPEN, EMMAP, ESYS), else 0
    int32_t kernel_samples;  ///< 1: opened with exclude_kernel=0, so samples in the kernel arrive
    int32_t paranoid;        ///< /proc/sys/kernel/perf_event_paranoid, or -100 if unreadable
    int32_t dwarf_unwinder;  ///< 1: libunwind-x86_64.so.8 loaded, SW_PERF_UNWIND_DWARF unwinds by CFI
    int32_t ring_pages;      ///< data pages of the ring buffer
    int32_t stack_bytes;     ///< user stack bytes copied per sample (rounded to 8)
} sw_perf_open_info;

/// Opens a disabled task-clock sampling event on thread `tid` (a thread of this process),
/// sampling every `period_ns` of its CPU time and copying `stack_bytes` (8...65000) of its user
/// stack per sample, and maps its ring buffer. Tries exclude_kernel=0 first unless flags has
/// SW_PERF_USER_ONLY, and falls back to exclude_kernel=1 on EACCES/EPERM. `info` may be NULL.
/// Returns SW_PERF_OK and *out, or a negative code (then *out is NULL). Any thread.
int sw_perf_open(int tid, int64_t period_ns, int32_t stack_bytes, int32_t flags, sw_perf **out,
                 sw_perf_open_info *info);

/// Discards unread records, then starts sampling. The handle's thread only.
int sw_perf_enable(sw_perf *perf);

/// Stops sampling (records already in the ring stay readable). The handle's thread only.
int sw_perf_disable(sw_perf *perf);

/// Changes the sampling period (ns of the thread's CPU time). The handle's thread only.
int sw_perf_set_period(sw_perf *perf, int64_t period_ns);

/// What sw_perf_latest found.
typedef struct sw_perf_sample {
    int64_t time_ns;          ///< CLOCK_MONOTONIC time of the sample (0 if none)
    int32_t in_kernel;        ///< 1: the thread was in the kernel (the registers are its syscall entry's)
    int32_t frame_count;      ///< frames unwound
    int32_t callchain_count;  ///< user frames of the kernel's own frame-pointer walk (PERF_SAMPLE_CALLCHAIN)
    int32_t stack_bytes;      ///< bytes of user stack the kernel copied
    int32_t truncated;        ///< 1: the unwind reached the end of the copy or the capacity
    int32_t records;          ///< sample records consumed by this call (all but the newest skipped)
    int32_t tid;              ///< the thread the sample belongs to
    int32_t reserved;
    uint64_t lost_total;      ///< records the kernel dropped because the ring was full, since open
    int64_t unwind_ns;        ///< time this call spent unwinding
    int32_t in_syscall;       ///< 1: in the kernel, and the user IP follows a `syscall` instruction
    int32_t reserved2;
    uint64_t syscall_arg0;    ///< with in_syscall: the user RDI saved at syscall entry, its first argument
    /// The awaiting callers of the async function the thread was in (CStallwatchAsyncChain.h):
    /// the innermost async frame's record from the stack copy, the contexts from live memory
    /// (still the sampled job's while it runs on).
    sw_async_chain chain;
} sw_perf_sample;

/// Consumes every record in the ring and unwinds the newest sample taken at or after
/// `not_before_ns` (CLOCK_MONOTONIC) with `method`. Writes up to `capacity` addresses to
/// `frames`: frames[0] the user instruction pointer, frames[1...] return addresses, innermost
/// first (the signal sampler's convention). If `callchain` is not NULL, also writes up to
/// `callchain_capacity` addresses of the kernel's frame-pointer callchain of the same sample.
/// Returns the frame count (>= 1), 0 if no such sample arrived, or a negative code. `out` may be
/// NULL. The handle's thread only.
int sw_perf_latest(sw_perf *perf, int64_t not_before_ns, int32_t method, uintptr_t *frames,
                   int32_t capacity, uintptr_t *callchain, int32_t callchain_capacity,
                   sw_perf_sample *out);

/// Disables the event, unmaps the ring and frees the handle. NULL is fine. The handle's thread.
void sw_perf_close(sw_perf *perf);

/// Human-readable text for a SW_PERF_E* code (static string). Any thread.
const char *sw_perf_strerror(int code);

#ifdef __cplusplus
}
#endif
