// Small C shims for the run loop's Linux platform code. Nothing here runs in a signal handler.
#pragma once

// The platform, stated once for this target: Linux (epoll, eventfd, prctl, process_vm_readv) on
// x86_64 (sw_cycles reads the TSC). See docs/watchdog.md, "Porting".
#if !defined(__linux__) || !defined(__x86_64__)
#error "CStallwatchShims supports Linux on x86_64 only (see docs/watchdog.md, Porting)"
#endif

#include <pthread.h>
#include <stdint.h>

/// The pthread of the process's main thread, captured by a load-time constructor (which runs
/// on the main thread before `main`). Any thread may call it.
pthread_t sw_main_thread(void);

/// The calling thread's kernel thread id. Any thread may call it (one syscall).
int32_t sw_gettid(void);

/// libdispatch's main-queue hooks for run loops (what CoreFoundation uses). The handle is an
/// eventfd that becomes readable when the main queue has work; after reading it, the owner
/// of the process's main thread drains the queue with the callback. Main thread only.
int sw_dispatch_main_queue_handle(void);
void sw_dispatch_main_queue_drain(void);

#include <sys/epoll.h>
#include <sys/eventfd.h>

/// `epoll_pwait2` with a nanosecond timeout (negative: wait forever), falling back to
/// `epoll_wait` (rounded up to whole milliseconds) on kernels without it. Returns what the
/// syscall returns; errno is left for the caller (EINTR is retried by the Swift side).
int sw_epoll_wait_ns(int epfd, struct epoll_event *events, int max, int64_t timeout_ns);

/// CLOCK_MONOTONIC in nanoseconds (vDSO: no syscall on this kind of machine).
uint64_t sw_monotonic_ns(void);

/// Sets the calling thread's timer slack (how late the kernel may end its timed waits) to
/// `nanos`; the default of 50 µs would show up as timer lateness. Returns prctl's result.
int sw_set_timer_slack(unsigned long nanos);

/// Names the calling thread (at most 15 bytes show in /proc/self/task/<tid>/comm).
void sw_set_thread_name(const char *name);

/// A cheap monotonic cycle counter for per-callout timestamps: the TSC (invariant on the
/// machines this runs on: constant_tsc, nonstop_tsc), which `Timebase` converts to
/// CLOCK_MONOTONIC: cheaper than clock_gettime (docs/watchdog.md, "Mechanism", has the figures).
/// The shims' only x86_64 code. Any thread.
static inline uint64_t sw_cycles(void) {
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/// Copies `length` bytes of this process's memory at `address` into `buffer` through the
/// kernel (process_vm_readv): an unmapped page gives an error instead of a crash, and the
/// read of another thread's live stack is not an instrumented (racy-looking) access.
/// Returns the number of bytes copied, or -1. Any thread.
long sw_read_memory(uint64_t address, void *buffer, unsigned long length);

/// Gives the calling thread the first scheduling it is allowed, every one with
/// SCHED_RESET_ON_FORK (threads it creates start with the default policy and nice 0): 1,
/// SCHED_FIFO priority 1 (root or CAP_SYS_NICE); 2, nice −10; 3, a short slice (`slice_ns`,
/// EEVDF's `sched_runtime` for SCHED_OTHER, Linux 6.12+: on wake-up it preempts a CPU hog of the
/// normal policy sooner; no privilege needed); 0, none of them.
int sw_raise_thread_scheduling(uint64_t slice_ns);

/// The calling thread's CPU affinity mask (sched_getaffinity(0, …)). glibc declares it only
/// under _GNU_SOURCE, which Swift's Glibc module does not define. Returns 0, or -1 with errno
/// (EINVAL if the kernel's mask is wider than cpu_set_t's 1024 CPUs). Any thread.
int sw_get_thread_affinity(cpu_set_t *set);

/// Restricts the calling thread (only it, not the process) to the CPUs in `set`
/// (sched_setaffinity(0, …)); tests use it to check the core count follows the mask.
/// Returns 0, or -1 with errno. Any thread.
int sw_set_thread_affinity(const cpu_set_t *set);
#include "sw_text_slot.h"
#include "sw_cachestat.h"
#include "sw_tick_slot.h"
#include "sw_pool_hook.h"
#include "sw_loop_slot.h"
